// SPDX-License-Identifier: MIT

/// Which handler serves which attribute: at most one per attribute. Claims outlive a
/// reload that rebuilds the tree (`apply(to:)`), and end when the handler is released.
public final class HandlerRegistry {
    public enum ClaimError: Error, Equatable, Sendable {
        case unknownID(String)
        case alreadyClaimed(id: String, by: String)
    }

    private var claims: [String: any AttributeHandler] = [:]
    private var database: AttributeDatabase?

    public init() {}

    /// The handler of attribute `id`, if any.
    public func handler(of id: String) -> (any AttributeHandler)? { claims[id] }

    /// Claims `ids` for `handler`, all or none: an unknown id or one another handler holds
    /// refuses the whole claim. Claiming an id the same handler holds again is fine.
    /// - Returns: nil when claimed, else why not.
    public func claim(_ ids: [String], for handler: any AttributeHandler) -> ClaimError? {
        for id in ids {
            guard database?[id] != nil else { return .unknownID(id) }
            if let holder = claims[id], holder !== handler {
                return .alreadyClaimed(id: id, by: holder.name)
            }
        }
        for id in ids {
            claims[id] = handler
            database?[id]?.handler = handler
        }
        return nil
    }

    /// Drops every claim of `handler`; returns the ids it held.
    @discardableResult
    public func release(_ handler: any AttributeHandler) -> [String] {
        let ids = claims.filter { $0.value === handler }.map(\.key).sorted()
        for id in ids {
            claims[id] = nil
            database?[id]?.handler = nil
        }
        return ids
    }

    /// Puts the claims on `database`'s attributes (at start, and after a reload rebuilt
    /// the tree); claims of ids the new tree lacks are dropped and returned.
    @discardableResult
    public func apply(to database: AttributeDatabase) -> [String] {
        self.database = database
        var dropped: [String] = []
        for (id, handler) in claims.sorted(by: { $0.key < $1.key }) {
            if let attribute = database[id] {
                attribute.handler = handler
            } else {
                claims[id] = nil
                dropped.append(id)
            }
        }
        return dropped
    }
}
