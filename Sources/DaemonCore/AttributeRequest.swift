// SPDX-License-Identifier: MIT

/// What the daemon knows about one read or write request besides its bytes: where it came
/// from and the link it travels on (for a central, the options bluetoothd sends with
/// `ReadValue`/`WriteValue`; docs/bluez-contract.md §2).
public struct AttributeRequest: Sendable, Equatable {
    /// Who asks: a central through bluetoothd, or a program through the control API.
    public enum Caller: Sendable, Equatable {
        case central
        case control
    }

    public var caller: Caller
    /// The central's device object path, when bluetoothd names it: an opaque handle, never
    /// read for an address.
    public var device: String?
    /// The central's address as bluetoothd gives it (`Device1.Address`: the identity once
    /// bonded); filled in by `RequestService` for handlers and hooks only.
    public var address: String?
    /// Byte offset of a read or write (long reads, long and prepared writes).
    public var offset: Int
    /// The link's ATT MTU, when known.
    public var mtu: Int?
    /// The bearer (`LE`, `BR/EDR`), when bluetoothd says.
    public var link: String?
    /// A Prepare Write asking only whether it may be queued (`prepare-authorize`).
    public var prepareAuthorize: Bool
    /// False for a Write Command (write-without-response): nobody waits for the outcome.
    public var expectsReply: Bool

    public init(
        caller: Caller = .central, device: String? = nil, offset: Int = 0, mtu: Int? = nil, link: String? = nil,
        prepareAuthorize: Bool = false, expectsReply: Bool = true
    ) {
        self.caller = caller
        self.device = device
        self.address = nil
        self.offset = offset
        self.mtu = mtu
        self.link = link
        self.prepareAuthorize = prepareAuthorize
        self.expectsReply = expectsReply
    }

    /// A program on the board setting a whole value.
    public static let control = AttributeRequest(caller: .control)

    /// The origin a value stored by this request carries.
    var origin: ValueChangeOrigin {
        switch caller {
        case .central: .central(device: device)
        case .control: .control
        }
    }
}
