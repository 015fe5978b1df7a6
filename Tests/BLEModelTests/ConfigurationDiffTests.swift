// SPDX-License-Identifier: MIT

import BLEModel
import Foundation
import Testing

@Suite("Configuration difference for reload")
struct ConfigurationDiffTests {
    /// A small valid configuration; tests derive variants from its text.
    static let base = """
        {"version": 1, "adapter": "hci0",
         "services": [
          {"id": "svc", "uuid": "12345678-1234-5678-1234-56789abc0000",
           "characteristics": [
            {"id": "label", "uuid": "12345678-1234-5678-1234-56789abc0001", "flags": ["read", "write"],
             "value": {"utf8": "factory"}, "minLength": 1, "maxLength": 20,
             "descriptors": [{"id": "label-desc", "uuid": "2901", "flags": ["read"], "value": {"utf8": "Label"}}]},
            {"id": "level", "uuid": "2a19", "flags": ["read", "notify"], "value": {"hex": "64"}}
           ]}
         ],
         "advertisements": [
          {"id": "main", "localName": "gattd", "manufacturerData": {"0xffff": {"hex": "0102"}}}
         ]}
        """

    private func load(_ text: String) throws -> Configuration {
        try ConfigurationLoader.parse(Array(text.utf8)).get().configuration
    }

    private func diff(_ edit: (String) -> String) throws -> ConfigurationDiff {
        let old = try load(Self.base)
        let new = try load(edit(Self.base))
        return ConfigurationDiff(from: old, to: new)
    }

    @Test("the same file is no change at all")
    func identical() throws {
        let result = try diff { $0 }
        #expect(result.isEmpty)
        #expect(!result.needsNewApplication)
        #expect(result.summary == "no changes")
    }

    @Test("changed advertisement data is an in-place advertisement change, not a GATT change")
    func advertisementData() throws {
        let result = try diff { $0.replacingOccurrences(of: "\"0102\"", with: "\"0a0b0c\"") }
        #expect(result.changedAdvertisements.map(\.id) == ["main"])
        #expect(result.changedAdvertisements.first?.manufacturerData.first?.value == [0x0A, 0x0B, 0x0C])
        #expect(result.treeChanges.isEmpty && result.addedAdvertisements.isEmpty && result.removedAdvertisements.isEmpty)
        #expect(!result.needsNewApplication)
        #expect(result.summary == "advertisements changed: main")
    }

    @Test("advertisements are matched by id: one added, one removed")
    func advertisementsAddedAndRemoved() throws {
        let result = try diff { $0.replacingOccurrences(of: "\"id\": \"main\"", with: "\"id\": \"other\"") }
        #expect(result.addedAdvertisements.map(\.id) == ["other"])
        #expect(result.removedAdvertisements == ["main"])
        #expect(result.changedAdvertisements.isEmpty)
    }

    @Test("a new initial value is applied in place when the tree is unchanged")
    func initialValue() throws {
        let result = try diff { $0.replacingOccurrences(of: "\"hex\": \"64\"", with: "\"hex\": \"32\"") }
        #expect(result.initialValues == [ConfigurationDiff.ValueChange(id: "level", value: [0x32])])
        #expect(!result.needsNewApplication)
        #expect(result.summary == "initial value of level")
    }

    @Test("a descriptor's initial value counts like a characteristic's")
    func descriptorValue() throws {
        let result = try diff { $0.replacingOccurrences(of: "\"Label\"", with: "\"Name\"") }
        #expect(result.initialValues == [ConfigurationDiff.ValueChange(id: "label-desc", value: Array("Name".utf8))])
    }

    @Test("an added characteristic is the only change; source paths do not count")
    func addedCharacteristic() throws {
        let result = try diff {
            $0.replacingOccurrences(
                of: "\"value\": {\"hex\": \"64\"}}",
                with: "\"value\": {\"hex\": \"64\"}},\n{\"id\": \"extra\", \"uuid\": \"2a37\", \"flags\": [\"read\"]}")
        }
        #expect(result.treeChanges == ["characteristic extra added"])
        #expect(result.needsNewApplication)
        #expect(result.initialValues.isEmpty && result.behaviourChanges.isEmpty)
    }

    @Test(
        "flags, bounds and UUIDs are GATT tree changes",
        arguments: [
            ("[\"read\", \"notify\"]", "[\"read\", \"indicate\"]", "characteristic level changed"),
            ("\"maxLength\": 20", "\"maxLength\": 30", "characteristic label changed"),
            ("\"uuid\": \"2901\"", "\"uuid\": \"2904\"", "descriptor label-desc changed"),
            ("\"uuid\": \"12345678-1234-5678-1234-56789abc0000\"", "\"uuid\": \"180f\"", "service svc changed"),
            // the socket path changes which properties bluetoothd finds on the object
            ("[\"read\", \"notify\"]", "[\"read\", \"notify\"], \"acquireNotify\": true", "characteristic level changed"),
        ])
    func treeChange(before: String, after: String, expected: String) throws {
        let result = try diff { $0.replacingOccurrences(of: before, with: after) }
        #expect(result.treeChanges == [expected])
        #expect(result.needsNewApplication)
    }

    @Test("a removed descriptor is named")
    func removedDescriptor() throws {
        let result = try diff {
            $0.replacingOccurrences(
                of: ",\n     \"descriptors\": [{\"id\": \"label-desc\", \"uuid\": \"2901\", \"flags\": [\"read\"], \"value\": {\"utf8\": \"Label\"}}]",
                with: "")
        }
        #expect(result.treeChanges == ["descriptor label-desc removed"])
    }

    @Test("persist is a behaviour change: the application is rebuilt, the tree is not reported changed")
    func behaviour() throws {
        let result = try diff { $0.replacingOccurrences(of: "\"minLength\": 1,", with: "\"minLength\": 1, \"persist\": false,") }
        #expect(result.behaviourChanges == ["label"])
        #expect(result.treeChanges.isEmpty)
        #expect(result.needsNewApplication)
    }

    @Test("adapter and alias are reported as needing a restart")
    func restartOnly() throws {
        let result = try diff {
            $0.replacingOccurrences(of: "\"adapter\": \"hci0\"", with: "\"adapter\": \"hci1\", \"alias\": \"Board\"")
        }
        #expect(result.restartOnly == ["adapter", "alias"])
        #expect(!result.needsNewApplication)
        #expect(result.summary == "needs a restart: adapter, alias")
    }
}
