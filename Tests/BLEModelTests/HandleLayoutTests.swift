// SPDX-License-Identifier: MIT

import BLEModel
import Testing

private func configuration(_ services: String) throws -> Configuration {
    try load("{\"version\": 1, \"services\": [\(services)]}").get().configuration
}

/// A service `s` with a notify characteristic `a` (declaration, value, CCC), a plain
/// read characteristic `b` with one descriptor, and a reliable-write `c` (with its CEP).
private let base = """
    {"id": "s", "uuid": "180D", "characteristics": [
      {"id": "a", "uuid": "2A37", "flags": ["notify"]},
      {"id": "b", "uuid": "2A38", "flags": ["read"], "descriptors": [{"id": "b-desc", "uuid": "2901", "flags": ["read"]}]},
      {"id": "c", "uuid": "2A39", "flags": ["write", "reliable-write"]}]}
    """

@Suite("Handle layout: where gattd asks bluetoothd to put each attribute")
struct HandleLayoutTests {
    @Test("sizes follow bluetoothd: declaration, value, CCC, CEP, descriptors")
    func sizes() throws {
        let service = try configuration(base).services[0]
        #expect(service.characteristics.map(HandleLayout.size(of:)) == [3, 3, 3])
        #expect(HandleLayout.size(of: service) == 10)
    }

    @Test("a first registration requests nothing: bluetoothd chooses")
    func fresh() throws {
        let layout = HandleLayout.plan(try configuration(base))
        #expect(layout.handles.isEmpty && layout.moved.isEmpty && layout.problems.isEmpty)
        #expect(layout.characteristicOrder["s"] == ["a", "b", "c"])
    }

    @Test("remembered handles are requested again, consecutively from the service's")
    func remembered() throws {
        let remembered = AttributeHandles(
            services: ["s": 0x40], characteristics: ["a": 0x42, "b": 0x45, "c": 0x48], descriptors: ["b-desc": 0x46])
        let layout = HandleLayout.plan(try configuration(base), remembered: remembered)
        #expect(layout.handles == remembered)
        #expect(layout.moved.isEmpty)
    }

    @Test("a characteristic added before another goes after the existing ones; a new service after all")
    func additions() throws {
        let remembered = AttributeHandles(
            services: ["s": 0x40], characteristics: ["a": 0x42, "b": 0x45, "c": 0x48], descriptors: ["b-desc": 0x46])
        let grown = """
            {"id": "first", "uuid": "180F", "characteristics": [{"id": "level", "uuid": "2A19", "flags": ["read"]}]},
            {"id": "s", "uuid": "180D", "characteristics": [
              {"id": "new", "uuid": "2A3A", "flags": ["read"]},
              {"id": "a", "uuid": "2A37", "flags": ["notify"]},
              {"id": "b", "uuid": "2A38", "flags": ["read"], "descriptors": [{"id": "b-desc", "uuid": "2901", "flags": ["read"]}]},
              {"id": "c", "uuid": "2A39", "flags": ["write", "reliable-write"]}]}
            """
        let layout = HandleLayout.plan(try configuration(grown), remembered: remembered)
        #expect(layout.characteristicOrder["s"] == ["a", "b", "c", "new"])
        #expect(layout.handles.characteristics["new"] == 0x4B)
        #expect(layout.handles.services["first"] == 0x4C, "after the grown service's last handle 0x4b")
        #expect(layout.handles.characteristics["level"] == 0x4E)
        #expect(layout.moved.isEmpty)
        for (id, handle) in remembered.characteristics { #expect(layout.handles.characteristics[id] == handle) }
    }

    @Test("a remembered service that grew into the next one is placed anew, and the log says so")
    func grownIntoNeighbour() throws {
        let two = base + """
            , {"id": "t", "uuid": "180F", "characteristics": [{"id": "level", "uuid": "2A19", "flags": ["read"]}]}
            """
        let remembered = AttributeHandles(services: ["s": 0x40, "t": 0x4A], characteristics: ["level": 0x4C])
        var grown = try configuration(two)
        grown.services[0].characteristics.append(
            CharacteristicDefinition(id: "d", uuid: BluetoothUUID(uuid16: 0x2A3B), flags: [.read]))
        let layout = HandleLayout.plan(grown, remembered: remembered)
        #expect(layout.handles.services["t"] == 0x4A && layout.handles.characteristics["level"] == 0x4C)
        #expect(layout.handles.services["s"] == 0x4D)
        #expect(layout.moved.count == 1 && layout.moved[0].hasPrefix("service s: its handles 0x0040-0x004B overlap service t at 0x004A-0x004C"))
    }

    @Test("a removed characteristic moves the ones after it in its service (no gaps in a service)")
    func removal() throws {
        let remembered = AttributeHandles(
            services: ["s": 0x40], characteristics: ["a": 0x42, "b": 0x45, "c": 0x48], descriptors: ["b-desc": 0x46])
        var config = try configuration(base)
        config.services[0].characteristics.remove(at: 1)
        let layout = HandleLayout.plan(config, remembered: remembered)
        #expect(layout.handles.characteristics == ["a": 0x42, "c": 0x45])
        #expect(layout.moved == ["characteristic c: 0x0048 -> 0x0045 (attributes before it in its service changed)"])
    }

    @Test("pinned handles that fit the layout are requested")
    func pinned() throws {
        let text = """
            {"id": "s", "uuid": "180D", "handle": "0x0100", "characteristics": [
              {"id": "a", "uuid": "2A37", "flags": ["notify"]},
              {"id": "b", "uuid": "2A38", "flags": ["read"], "handle": 258}]}
            """
        let loaded = try load("{\"version\": 1, \"services\": [\(text)]}").get()
        let layout = HandleLayout.plan(loaded.configuration)
        #expect(layout.characteristicOrder["s"] == ["b", "a"], "the pinned one first")
        #expect(layout.handles.characteristics == ["b": 0x102, "a": 0x104])
    }

    @Test("--check refuses pinned handles that collide, run past 0xFFFF, or are out of order")
    func pinnedProblems() {
        let overlap = """
            {"id": "s", "uuid": "180D", "handle": 16, "characteristics": [{"id": "a", "uuid": "2A37", "flags": ["read"]}]},
            {"id": "t", "uuid": "180F", "handle": 18, "characteristics": [{"id": "b", "uuid": "2A19", "flags": ["read"]}]}
            """
        #expect(
            issueDescriptions("{\"version\": 1, \"services\": [\(overlap)]}") == [
                "services[1].handle: the service's handles 0x0012-0x0014 overlap service \"s\" at 0x0010-0x0012"
            ])
        let pastEnd = """
            {"id": "s", "uuid": "180D", "handle": 65534, "characteristics": [{"id": "a", "uuid": "2A37", "flags": ["read"]}]}
            """
        #expect(
            issueDescriptions("{\"version\": 1, \"services\": [\(pastEnd)]}") == [
                "services[0].handle: the service needs handles 0xFFFE-0x10000, past 0xFFFF"
            ])
        let misplaced = """
            {"id": "s", "uuid": "180D", "handle": 16, "characteristics": [{"id": "a", "uuid": "2A37", "flags": ["read"], "handle": 17}]}
            """
        #expect(
            issueDescriptions("{\"version\": 1, \"services\": [\(misplaced)]}") == [
                "services[0].characteristics[0].handle: handle 0x0011 is not where bluetoothd puts this attribute: "
                    + "with its service's handle and the attributes before it, its declaration is at 0x0011, its value at 0x0012"
            ])
        let orphan = """
            {"id": "s", "uuid": "180D", "characteristics": [{"id": "a", "uuid": "2A37", "flags": ["read"], "descriptors": [
              {"id": "d", "uuid": "2901", "flags": ["read"], "handle": 40}]}]}
            """
        #expect(
            issueDescriptions("{\"version\": 1, \"services\": [\(orphan)]}") == [
                "services[0].characteristics[0].descriptors[0].handle: a descriptor's handle needs its service's handle"
            ])
        #expect(
            issueDescriptions("{\"version\": 1, \"services\": [{\"uuid\": \"180D\", \"handle\": 0}]}").first?
                .hasPrefix("services[0].handle: ") == true)
    }

    @Test("a changed pinned handle changes the tree (a reload registers again)")
    func diff() throws {
        let old = try configuration(base)
        var new = old
        new.services[0].handle = 0x200
        #expect(ConfigurationDiff(from: old, to: new).needsNewApplication)
    }
}
