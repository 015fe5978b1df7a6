// SPDX-License-Identifier: MIT

/// What a handler serves of an attribute (`RegisterHandler`'s `operations`): reads,
/// writes, or both. The operations it does not take are gattd's own: reads come from the
/// store, writes are checked, decided by a deciding hook and stored as without a handler.
public struct HandlerOperations: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let read = HandlerOperations(rawValue: 1)
    public static let write = HandlerOperations(rawValue: 2)
    public static let both: HandlerOperations = [.read, .write]

    /// `read`, `write`, `read,write` (logs).
    public var names: String {
        [(Self.read, "read"), (Self.write, "write")].filter { contains($0.0) }.map(\.1).joined(separator: ",")
    }
}

/// Which handler serves which attribute: at most one per attribute and operation (a
/// program may take the writes of an attribute and another its reads). Claims outlive a
/// reload that rebuilds the tree (`apply(to:)`), and end when the handler is released.
public final class HandlerRegistry {
    public enum ClaimError: Error, Equatable, Sendable {
        case unknownID(String)
        case alreadyClaimed(id: String, by: String)
    }

    private struct Claim {
        var reads: (any AttributeHandler)?
        var writes: (any AttributeHandler)?

        var isEmpty: Bool { reads == nil && writes == nil }

        func apply(to attribute: Attribute) {
            attribute.readHandler = reads
            attribute.writeHandler = writes
        }
    }

    private var claims: [String: Claim] = [:]
    private var database: AttributeDatabase?

    public init() {}

    /// The handler of attribute `id`'s reads, else of its writes, if any.
    public func handler(of id: String) -> (any AttributeHandler)? { claims[id]?.reads ?? claims[id]?.writes }

    /// Claims `operations` of `ids` for `handler`, all or none: an unknown id or an
    /// operation another handler holds refuses the whole claim. Claiming again what the
    /// same handler holds is fine; its operations add up.
    /// - Returns: nil when claimed, else why not.
    public func claim(
        _ ids: [String], operations: HandlerOperations = .both, for handler: any AttributeHandler
    ) -> ClaimError? {
        for id in ids {
            guard database?[id] != nil else { return .unknownID(id) }
            let claim = claims[id]
            if operations.contains(.read), let holder = claim?.reads, holder !== handler {
                return .alreadyClaimed(id: id, by: holder.name)
            }
            if operations.contains(.write), let holder = claim?.writes, holder !== handler {
                return .alreadyClaimed(id: id, by: holder.name)
            }
        }
        for id in ids {
            var claim = claims[id] ?? Claim()
            if operations.contains(.read) { claim.reads = handler }
            if operations.contains(.write) { claim.writes = handler }
            claims[id] = claim
            if let attribute = database?[id] { claim.apply(to: attribute) }
        }
        return nil
    }

    /// Drops every claim of `handler`; returns the ids it held.
    @discardableResult
    public func release(_ handler: any AttributeHandler) -> [String] {
        var ids: [String] = []
        for (id, var claim) in claims.sorted(by: { $0.key < $1.key }) {
            guard claim.reads === handler || claim.writes === handler else { continue }
            if claim.reads === handler { claim.reads = nil }
            if claim.writes === handler { claim.writes = nil }
            claims[id] = claim.isEmpty ? nil : claim
            if let attribute = database?[id] { claim.apply(to: attribute) }
            ids.append(id)
        }
        return ids
    }

    /// Puts the claims on `database`'s attributes (at start, and after a reload rebuilt
    /// the tree); claims of ids the new tree lacks are dropped and returned.
    @discardableResult
    public func apply(to database: AttributeDatabase) -> [String] {
        self.database = database
        var dropped: [String] = []
        for (id, claim) in claims.sorted(by: { $0.key < $1.key }) {
            if let attribute = database[id] {
                claim.apply(to: attribute)
            } else {
                claims[id] = nil
                dropped.append(id)
            }
        }
        return dropped
    }
}
