// SPDX-License-Identifier: MIT
import ControlAPI
import Testing

/// The names the daemon and gattctl share (ControlAPI): each spelt once, each used once.
@Suite("Control API names: one row per method, one address check")
struct ControlAPITests {
    @Test("every method name has exactly one row, in the order introspection lists them")
    func oneRowPerMethod() {
        #expect(ControlRequest.methods.map(\.method) == ControlMethod.allCases)
        #expect(Set(ControlRequest.methods.map(\.name)).count == ControlRequest.methods.count)
    }

    @Test("every signal is declared once, with its signature")
    func signalsDeclared() {
        let declared = ControlSignal.descriptions
        #expect(declared.map(\.name) == ControlSignal.allCases.map(\.rawValue))
        #expect(Set(declared.map(\.name)).count == declared.count)
        #expect(declared.allSatisfy { !$0.signature.isEmpty })
    }

    @Test("every dictionary key is spelt once")
    func keysUnique() {
        #expect(Set(ControlKey.allCases.map(\.rawValue)).count == ControlKey.allCases.count)
    }

    @Test("an address is six pairs of ASCII hex digits, either case; nothing else passes")
    func oneAddressCheck() {
        #expect(ControlRequest.isAddress("AA:bb:0C:d1:E2:f3"))
        for text in [
            "", "AA:BB:CC:DD:EE", "AA:BB:CC:DD:EE:FF:00", "A:BB:CC:DD:EE:FF", "AAA:BB:CC:DD:EE:F",
            "GG:BB:CC:DD:EE:FF", "AA-BB-CC-DD-EE-FF", "AA:BB:CC:DD:EE:FF ",
            // Full-width hex digits: gattctl's own check (Character.isHexDigit, two Characters
            // a part) took them, the daemon's (two ASCII bytes a part) did not; ASCII only now.
            "\u{FF21}\u{FF21}:BB:CC:DD:EE:FF", "\u{FF10}\u{FF19}:BB:CC:DD:EE:FF", "\u{FF41}a:BB:CC:DD:EE:FF",
            "AA:BB:CC:DD:EE:FF\n",  // the Python library's `$` took a final newline
        ] {
            #expect(!ControlRequest.isAddress(text), "\(text)")
        }
    }
}
