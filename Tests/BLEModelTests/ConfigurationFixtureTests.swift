// SPDX-License-Identifier: MIT

import BLEModel
import Testing

/// Every file in Fixtures/invalid has a sibling `.expected` listing the exact issues
/// (one `description` per line) that loading it must report.
@Suite("Configuration fixtures")
struct ConfigurationFixtureTests {
    @Test("there is an invalid fixture for every rule, each with its expectation")
    func inventory() {
        let fixtures = Fixtures.names(in: "invalid")
        #expect(fixtures.count >= 20)
        #expect(fixtures == Fixtures.names(in: "invalid", extension: "expected"))
    }

    @Test("each invalid fixture reports exactly its issue", arguments: Fixtures.names(in: "invalid"))
    func invalid(name: String) throws {
        let expected = try Fixtures.text("invalid", name, "expected").split(separator: "\n").map(String.init)
        switch Fixtures.load(path: Fixtures.path("invalid", name)) {
        case .success:
            Issue.record("\(name).json loaded but should fail with \(expected)")
        case .failure(let errors):
            #expect(errors.issues.map(\.description) == expected)
            #expect(errors.issues.allSatisfy { $0.line != nil && $0.column != nil }, "every issue has a position")
        }
    }

    @Test("each valid fixture loads", arguments: Fixtures.names(in: "valid"))
    func valid(name: String) {
        switch Fixtures.load(path: Fixtures.path("valid", name)) {
        case .success(let loaded):
            #expect(loaded.configuration.version == 1)
        case .failure(let errors):
            Issue.record("\(name).json failed:\n\(errors)")
        }
    }

    @Test("config/example.json loads without warnings")
    func shippedExample() throws {
        let path = Fixtures.directory.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("config/example.json").path
        let loaded = try Fixtures.load(path: path).get()
        #expect(loaded.warnings.isEmpty)
        let ids = loaded.configuration.servicesInRegistrationOrder.map(\.id)
        #expect(ids == ["battery", "heart-rate"])
        #expect(loaded.configuration.advertisements.count >= 1)
    }
}
