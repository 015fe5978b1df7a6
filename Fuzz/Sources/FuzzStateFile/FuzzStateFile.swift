// SPDX-License-Identifier: MIT
//
// The state file: fuzzed bytes go through `StateDocument(decoding:)` and, when they decode,
// through `Persistence.restore` into a fixed database. Checked on every input:
// - a decoded document encodes to bytes that decode to the same document;
// - restore sets exactly the saved values it does not drop (with a reason), and every
//   attribute the document does not restore keeps its defined value.
import FuzzSupport
import BLEModel
import DaemonCore
import Logging

/// The fixed configuration the fuzzed state is restored into: characteristics and a
/// descriptor that persist, one that does not, a value source and an advertisement.
private let configurationText = """
    {"version": 1, "services": [
      {"id": "s", "uuid": "180F", "characteristics": [
        {"id": "level", "uuid": "2A19", "flags": ["read", "write"], "value": {"uint8": 100},
         "minLength": 1, "maxLength": 1},
        {"id": "name", "uuid": "2A00", "flags": ["read", "write"], "value": {"utf8": "gattd"},
         "minLength": 0, "maxLength": 20, "descriptors": [
           {"id": "label", "uuid": "2901", "flags": ["read", "write"], "value": {"utf8": "x"}}]},
        {"id": "fixed", "uuid": "2A01", "flags": ["read"], "value": {"hex": "0102"}},
        {"id": "tick", "uuid": "2A02", "flags": ["read", "notify"], "value": {"uint8": 0},
         "minLength": 1, "maxLength": 1,
         "update": {"everyMs": 1000, "source": {"counter": {}}, "encode": {"uint8": "$"}}}]}],
     "advertisements": [{"id": "main", "type": "peripheral", "localName": "f"}]}
    """

private let configuration: Configuration = {
    switch ConfigurationLoader.parse(Array(configurationText.utf8)) {
    case .success(let loaded): return loaded.configuration
    case .failure(let errors): fatalError("fuzz configuration is invalid: \(errors)")
    }
}()

private final class NoStorage: StateStorage {
    func save(_ document: StateDocument) throws(StateStoreError) {}
}

private let quiet: Logger = {
    var logger = Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })
    logger.logLevel = .critical
    return logger
}()

@_cdecl("FuzzStateFile_main")
public func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, testOneInput)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    fuzzStateFile(fuzzBytes(data, size))
}

func fuzzStateFile(_ bytes: [UInt8]) -> Int32 {
    let document: StateDocument
    do {
        document = try StateDocument(decoding: bytes)
    } catch {
        _ = error.description
        return 0
    }
    let again = try? StateDocument(decoding: document.encoded())
    precondition(again == document, "a decoded state document does not survive encode + decode")

    let database = AttributeDatabase(configuration: configuration)
    let persistence = Persistence(
        configuration: configuration, database: database, storage: NoStorage(),
        scheduling: PersistenceScheduling(afterIteration: { $0() }, after: { _, job in job() }), logger: quiet)
    let dropped = Set(persistence.restore(from: .loaded(document)).map(\.id))
    for attribute in database.attributes {
        let saved = attribute.isCharacteristic ? document.characteristics[attribute.id] : document.descriptors[attribute.id]
        if let saved, !dropped.contains(attribute.id) {
            precondition(attribute.value == saved.value, "\(attribute.id): restored value differs from the saved one")
        } else {
            precondition(attribute.value == attribute.initialValue, "\(attribute.id): changed without being restored")
        }
    }
    let restoredIDs = Set(document.characteristics.keys).union(document.descriptors.keys)
    for id in dropped where !restoredIDs.contains(id) {
        precondition(document.sources[id] != nil || document.advertisements[id] != nil, "\(id): dropped but not in the file")
    }
    return 0
}
