// SPDX-License-Identifier: MIT
import Glibc

/// One method of an exported object with its names and argument signature as C strings,
/// so an incoming call is matched against libdbus's header fields without making Swift
/// strings. Owns the copies; they live as long as the exported object.
final class DispatchEntry {
    let method: DBusMethod
    /// The row's handler (checked against the object at export); nil: `DBusObject.handle(_:)`.
    let handler: MethodHandler?
    let interface: UnsafeMutablePointer<CChar>
    let member: UnsafeMutablePointer<CChar>
    let signature: UnsafeMutablePointer<CChar>

    init(interface: String, method: DBusMethod) {
        self.method = method
        handler = method.handler
        self.interface = strdup(interface)
        self.member = strdup(method.name)
        self.signature = strdup(method.inSignature)
    }

    deinit {
        free(interface)
        free(member)
        free(signature)
    }

    /// Whether a call naming `member` (and `interface`, when the caller gave one) is this method.
    func matches(interface callInterface: UnsafePointer<CChar>?, member callMember: UnsafePointer<CChar>) -> Bool {
        guard strcmp(member, callMember) == 0 else { return false }
        guard let callInterface else { return true }
        return strcmp(interface, callInterface) == 0
    }
}
