// SPDX-License-Identifier: MIT
//
// SwiftPM links an executable target with `main` pointing at `<Target>_main`, so each fuzz
// target defines that symbol and hands control to libFuzzer's driver from here.

public typealias FuzzCallback = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32

@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: FuzzCallback
) -> Int32

/// Runs libFuzzer with the program's arguments (`-runs=`, `-max_total_time=`, corpus
/// directories: the usual libFuzzer options) on `callback`.
public func runFuzzer(
    _ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ callback: FuzzCallback
) -> Int32 {
    var count = argc
    var arguments = argv
    return runDriver(&count, &arguments, callback)
}

/// The input as bytes (libFuzzer passes a null pointer for the empty input).
public func fuzzBytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}
