// SPDX-License-Identifier: MIT
import CLinux
import Glibc

/// One signalfd per signal number, shared by every `SignalWatch` for that signal.
final class SignalSource {
    let fd: Int32
    var watches: [SignalWatch] = []
    var ioWatch: IOWatch?

    init(fd: Int32) { self.fd = fd }
}

extension EventLoop {
    /// Calls `handler` on the loop's thread each time `signo` is delivered.
    ///
    /// Blocks `signo` in the calling thread (`pthread_sigmask`) and reads it from a signalfd.
    /// Call it from the loop's thread before starting other threads, so they inherit the
    /// mask; a process-directed signal reaching a thread that does not block it runs its
    /// default action instead. Several deliveries before the loop reads may coalesce into one.
    public func onSignal(_ signo: Int32, _ handler: @escaping () -> Void) -> SignalWatch {
        let watch = SignalWatch(signal: signo, loop: self, handler: handler)
        if let source = signalSources[signo] {
            source.watches.append(watch)
            return watch
        }
        var mask = sigset_t()
        sigemptyset(&mask)
        sigaddset(&mask, signo)
        pthread_sigmask(SIG_BLOCK, &mask, nil)
        let fd = signalfd(-1, &mask, Int32(SFD_CLOEXEC | SFD_NONBLOCK))
        precondition(fd >= 0, "signalfd(\(signo)) failed: errno \(errno)")
        let source = SignalSource(fd: fd)
        source.watches.append(watch)
        source.ioWatch = self.watch(fd: fd, events: .readable) { [unowned source] _ in
            var info = signalfd_siginfo()
            while read(source.fd, &info, MemoryLayout<signalfd_siginfo>.size) == MemoryLayout<signalfd_siginfo>.size {
                for watch in source.watches where watch.isActive { watch.handler() }
            }
        }
        signalSources[signo] = source
        return watch
    }

    func removeSignalWatch(_ watch: SignalWatch) {
        guard let source = signalSources[watch.signal] else { return }
        source.watches.removeAll { $0 === watch }
        if source.watches.isEmpty {
            source.ioWatch?.cancel()
            close(source.fd)
            signalSources[watch.signal] = nil
        }
    }
}
