// SPDX-License-Identifier: MIT
//
// The configuration loader end to end: fuzzed bytes go through the JSON parser, the
// decoder, validation and the advertising byte budget (`ConfigurationLoader.parse`), then,
// for a valid configuration, the `gattd --check` report and the reload diff against the
// example configuration and against itself. Checked: an invalid document reports at least
// one error, each with a message; a configuration compared with itself has no changes.
import BLEModel
import FuzzSupport

@_cdecl("FuzzConfiguration_main")
public func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, testOneInput)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    fuzzConfiguration(fuzzBytes(data, size))
}

private let reference: Configuration = {
    let text = """
        {"version": 1, "services": [{"id": "s", "uuid": "180F", "characteristics": [
          {"id": "level", "uuid": "2A19", "flags": ["read", "write", "notify"], "value": {"uint8": 100}}]}],
         "advertisements": [{"id": "main", "serviceUUIDs": ["180F"], "includes": ["local-name"]}]}
        """
    switch ConfigurationLoader.parse(Array(text.utf8)) {
    case .success(let loaded): return loaded.configuration
    case .failure(let errors): fatalError("reference configuration is invalid: \(errors)")
    }
}()

func fuzzConfiguration(_ bytes: [UInt8]) -> Int32 {
    switch ConfigurationLoader.parse(bytes) {
    case .success(let loaded):
        let configuration = loaded.configuration
        precondition(!CheckReport(path: "fuzz.json", configuration: configuration).text.isEmpty)
        for warning in loaded.warnings { _ = warning.description }
        _ = ConfigurationDiff(from: reference, to: configuration)
        _ = ConfigurationDiff(from: configuration, to: reference)
        precondition(ConfigurationDiff(from: configuration, to: configuration).isEmpty, "a configuration differs from itself")
    case .failure(let errors):
        precondition(!errors.errors.isEmpty, "refused without an error")
        precondition(errors.issues.allSatisfy { !$0.message.isEmpty }, "an issue without a message")
        _ = errors.description
    }
    return 0
}
