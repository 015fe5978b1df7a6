// SPDX-License-Identifier: MIT

public import BLEModel

/// A program that serves attributes itself: answers reads with fresh values and decides
/// writes (the control API's `RegisterHandler`; `Control.ProgramHandler` is the D-Bus
/// side). DaemonCore calls it through `RequestService` only, and never waits: each answer
/// arrives later on the loop, exactly once, within `timeout` or as `.unavailable`.
public protocol AttributeHandler: AnyObject {
    /// Who the handler is, for logs and `ListCharacteristics` (bus name and object path).
    var name: String { get }
    /// A read of `attribute` (the whole value; DaemonCore slices it at the offset).
    func read(
        _ attribute: Attribute, _ request: AttributeRequest, timeout: Duration,
        answer: @escaping (HandlerAnswer<[UInt8]>) -> Void)
    /// A write of `bytes` at `request.offset`, already validated; `.answered` accepts it.
    func write(
        _ attribute: Attribute, bytes: [UInt8], _ request: AttributeRequest, timeout: Duration,
        answer: @escaping (HandlerAnswer<Void>) -> Void)
}

/// What a handler answered.
public enum HandlerAnswer<Value> {
    case answered(Value)
    /// The handler refused with an ATT error (its D-Bus error, mapped by name).
    case refused(GATTError)
    /// No answer: timed out or left the bus. The attribute's fallback applies.
    case unavailable(reason: String)
    /// An answer gattd cannot use (the wrong type): refused, never served from the stored
    /// value nor stored, with the fallback's error when it has one, else `unlikely`.
    case malformed(reason: String)
}
