// SPDX-License-Identifier: MIT

/// An ATT error a read or write can end with (Core Spec Vol 3 Part F §3.4.1.1 and the
/// common profile codes of CSS Part B §1.2).
///
/// Only codes an application can make bluetoothd send are representable; security errors
/// (insufficient encryption/authentication) come from flags, not from here. The BlueZ
/// module owns the mapping to `org.bluez.Error.*` names.
public enum GATTError: Error, Equatable, Sendable {
    case readNotPermitted
    case writeNotPermitted
    case invalidOffset
    case invalidAttributeValueLength
    case insufficientAuthorization
    case requestNotSupported
    case procedureAlreadyInProgress
    case cccImproperlyConfigured
    case unlikely
    /// An application error, 0x80...0x9F.
    case application(UInt8)

    /// The ATT error code sent on air.
    public var attCode: UInt8 {
        switch self {
        case .readNotPermitted: 0x02
        case .writeNotPermitted: 0x03
        case .invalidOffset: 0x07
        case .invalidAttributeValueLength: 0x0D
        case .insufficientAuthorization: 0x08
        case .requestNotSupported: 0x06
        case .procedureAlreadyInProgress: 0xFE
        case .cccImproperlyConfigured: 0xFD
        case .unlikely: 0x0E
        case .application(let code): code
        }
    }

    /// The error for an ATT code, or nil when no case represents it (application codes
    /// must be 0x80...0x9F).
    public init?(attCode: UInt8) {
        switch attCode {
        case 0x02: self = .readNotPermitted
        case 0x03: self = .writeNotPermitted
        case 0x07: self = .invalidOffset
        case 0x0D: self = .invalidAttributeValueLength
        case 0x08: self = .insufficientAuthorization
        case 0x06: self = .requestNotSupported
        case 0xFE: self = .procedureAlreadyInProgress
        case 0xFD: self = .cccImproperlyConfigured
        case 0x0E: self = .unlikely
        case 0x80...0x9F: self = .application(attCode)
        default: return nil
        }
    }
}
