// SPDX-License-Identifier: MIT

/// A signal match registered with `BusConnection.subscribe`; `cancel()` removes the bus
/// match rule and stops delivery.
public final class SignalSubscription {
    let sender: String?
    let path: ObjectPath?
    let interface: String?
    let member: String?
    let arg0: String?
    let rule: String
    let handler: (Message) -> Void
    private let anchor: ConnectionAnchor
    /// The connection it was registered on; nil once it is gone.
    var connection: BusConnection? { anchor.connection }

    /// Whether matching signals are still delivered.
    public private(set) var isActive = true

    init(sender: String?, path: ObjectPath?, interface: String?, member: String?, arg0: String?,
         connection: BusConnection, handler: @escaping (Message) -> Void) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.arg0 = arg0
        self.anchor = connection.anchor
        self.handler = handler
        var rule = "type='signal'"
        func add(_ key: String, _ value: String?) {
            guard let value else { return }
            rule += ",\(key)='\(value.replacingQuotes())'"
        }
        add("sender", sender)
        add("path", path?.rawValue)
        add("interface", interface)
        add("member", member)
        add("arg0", arg0)
        self.rule = rule
    }

    /// Removes the match rule (without waiting) and stops delivery; idempotent.
    public func cancel() {
        guard isActive else { return }
        isActive = false
        connection?.removeSubscription(self)
    }
}

extension String {
    /// Match-rule quoting: `'` becomes `'\''` (close quote, escaped quote, reopen).
    fileprivate func replacingQuotes() -> String {
        guard contains("'") else { return self }
        var result = ""
        for character in self {
            if character == "'" { result += "'\\''" } else { result.append(character) }
        }
        return result
    }
}
