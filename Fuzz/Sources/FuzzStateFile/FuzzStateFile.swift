// SPDX-License-Identifier: MIT
//
// The state file: fuzzed bytes go through `StateDocument(decoding:)` and, when they decode,
// through `Persistence.restore` into a fixed database. Checked on every input:
// - a decoded document encodes to bytes that decode to the same document;
// - every attribute restore changes takes the saved value of its own kind, every saved
//   value is either restored or dropped with a reason, and nothing is dropped that the
//   file does not hold (the same id may be in several sections).
import BLEModel
import DaemonCore
import FuzzSupport
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
    let dropped = persistence.restore(from: .loaded(document)).map(\.id)
    // Every attribute that changed took a saved value of its own kind...
    for attribute in database.attributes where attribute.value != attribute.initialValue {
        let saved = attribute.isCharacteristic ? document.characteristics[attribute.id] : document.descriptors[attribute.id]
        precondition(saved?.value == attribute.value, "\(attribute.id): changed without being restored")
    }
    // ...and every saved value was either restored or dropped with a reason.
    for (entries, asCharacteristic) in [(document.characteristics, true), (document.descriptors, false)] {
        for (id, saved) in entries {
            let restored = database[id].map { $0.isCharacteristic == asCharacteristic && $0.value == saved.value } ?? false
            precondition(restored || dropped.contains(id), "\(id): neither restored nor dropped")
        }
    }
    for id in dropped {
        let entries = [
            document.characteristics[id] != nil, document.descriptors[id] != nil,
            document.sources[id] != nil, document.advertisements[id] != nil,
        ]
        precondition(dropped.filter { $0 == id }.count <= entries.filter { $0 }.count, "\(id): dropped more often than saved")
    }
    return 0
}
