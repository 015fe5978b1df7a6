// SPDX-License-Identifier: MIT

public import BLEModel
import Glibc
import SystemCalls

/// `{"file": {...}}`: reads the whole file at `path` on every tick.
///
/// Meant for sysfs and small state files: at most `maximumSize` bytes are read, with
/// plain blocking reads (sysfs answers at once); the file is opened `O_NONBLOCK` so a FIFO
/// without a writer cannot stall the loop. `number` yields `value * scale + offset`;
/// `text` is trimmed of surrounding whitespace; `bytes` is the content as is.
/// Failures (`open: No such file or directory`, `not a number`) keep the current value.
public final class FileSource: ValueSource {
    public static let maximumSize = 4096
    public let path: String
    public let format: SourceFormat
    public let scale: Double
    public let offset: Double

    public init(path: String, format: SourceFormat, scale: Double = 1, offset: Double = 0) {
        self.path = path
        self.format = format
        self.scale = scale
        self.offset = offset
    }

    public func next(_ done: @escaping (Result<SourceReading, SourceFailure>) -> Void) {
        done(read().flatMap(parse))
    }

    private func parse(_ bytes: [UInt8]) -> Result<SourceReading, SourceFailure> {
        switch format {
        case .bytes: .success(.bytes(bytes))
        case .text: SourceText.text(bytes).map(SourceReading.text)
        case .number: SourceText.number(bytes).map { .number($0 * scale + offset) }
        }
    }

    private func read() -> Result<[UInt8], SourceFailure> {
        do throws(SystemCallError) {
            return .success(try SystemCall.readFile(path, limit: Self.maximumSize, flags: O_NONBLOCK | O_NOCTTY))
        } catch where error.code == EFBIG {
            return .failure(SourceFailure(kind: "larger than \(Self.maximumSize) bytes", detail: path))
        } catch {
            return .failure(Self.failure(error.operation, error.code, path))
        }
    }

    private static func failure(_ operation: String, _ code: Int32, _ path: String) -> SourceFailure {
        SourceFailure(kind: "\(operation): \(String(cString: strerror(code)))", detail: path)
    }
}
