// SPDX-License-Identifier: MIT

import ArgumentParser
import ControlAPI
import DBusKit

/// gattctl's exit statuses, as listed in `gattctl --help` and docs/control-api.md.
enum ExitStatus: Int32 {
    case ok = 0
    /// No bus, gattd not running, or gattd runs without its control API.
    case unreachable = 1
    /// Bad command line.
    case usage = 2
    /// No characteristic or advertisement has that id.
    case unknownID = 3
    /// The value cannot be encoded or has the wrong length.
    case invalidValue = 4
    /// gattd or the bus refused the call (policy, a failed save, anything else).
    case refused = 5

    static let helpText = """
        Exit status: 0 success; 1 gattd not reachable (no system bus, gattd not running, or \
        running without its control API); 2 usage error; 3 unknown characteristic or \
        advertisement id, or no bond, connected central or pending pairing confirmation with that \
        address; 4 invalid value (not \
        encodable, the wrong length, or advertising data that \
        breaks the rules or the byte budget); 5 refused by \
        gattd or the bus policy (e.g. not root and not in group gattd, or the value could not be saved).
        """

    /// The status for a D-Bus error reply.
    init(_ error: DBusError) {
        switch error.name {
        case ControlError.Name.unknownCharacteristic, ControlError.Name.unknownAdvertisement,
            ControlError.Name.unknownBond, ControlError.Name.unknownCentral, ControlError.Name.noPendingConfirmation:
            self = .unknownID
        case ControlError.Name.invalidValueLength, ControlError.Name.invalidAdvertisement:
            self = .invalidValue
        case DBusError.Name.serviceUnknown, DBusError.Name.noReply, DBusError.Name.disconnected,
            DBusError.Name.nameHasNoOwner, DBusError.Name.fileNotFound, DBusError.Name.noServer, DBusError.Name.timeout,
            DBusError.Name.unknownObject, DBusError.Name.unknownMethod, DBusError.Name.unknownInterface:
            self = .unreachable
        default:
            self = .refused
        }
    }
}

/// A failure gattctl reports in one line on stderr, then exits with `status`.
struct Failure: Error {
    let status: ExitStatus
    let message: String

    init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    /// The message for an error reply from gattd or the bus.
    init(_ error: DBusError) {
        let status = ExitStatus(error)
        switch status {
        case .unreachable:
            self.init(status, "gattd is not reachable on the system bus (\(error.name): \(error.message))")
        case .refused where error.name == DBusError.Name.accessDenied:
            self.init(
                status, "the bus refused the call; run as root or as a member of group gattd (\(error.message))")
        default:
            self.init(status, error.message.isEmpty ? error.name : error.message)
        }
    }
}
