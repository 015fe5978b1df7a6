// SPDX-License-Identifier: MIT
import DBusKit
import Testing

@Suite("Object paths from configuration ids: one sanitiser")
struct ObjectPathElementTests {
    @Test func idsBecomeValidUniqueElements() throws {
        var used = Set<ObjectPath>()
        let root: ObjectPath = "/org/gattd/app"
        #expect(root.appendingUniqueElement(for: "heart-rate", used: &used) == "/org/gattd/app/heart_rate")
        #expect(root.appendingUniqueElement(for: "heart_rate", used: &used) == "/org/gattd/app/heart_rate_2")
        #expect(root.appendingUniqueElement(for: "heart.rate", used: &used) == "/org/gattd/app/heart_rate_3")
        #expect(root.appendingUniqueElement(for: "", used: &used) == "/org/gattd/app/_")
        #expect(root.appendingUniqueElement(for: "été", used: &used) == "/org/gattd/app/_t_")
        #expect(ObjectPath.root.appendingUniqueElement(for: "adv", used: &used) == "/adv")
        for path in used { #expect(ObjectPath.isValid(path.rawValue)) }
    }
}
