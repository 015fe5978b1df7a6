# SPDX-License-Identifier: MIT
"""Errors: gattd's D-Bus error names as Python exceptions, and ATT results for handlers."""

from __future__ import annotations

from typing import ClassVar, Dict, Optional, Type, Union

__all__ = [
    "GattdError", "UnknownCharacteristic", "UnknownAdvertisement", "InvalidValueLength", "NotSaved",
    "InvalidAdvertisement", "AlreadyClaimed", "NotRegistered", "QueueFull", "PairingUnavailable",
    "NoPendingConfirmation", "UnknownBond", "UnknownCentral", "CannotTarget", "Failed", "InvalidArgs",
    "AccessDenied", "NotRunning", "NoReply", "AttError",
]


class GattdError(Exception):
    """An error gattd (or the bus, on its behalf) answered a call with.

    `name` is the D-Bus error name (``org.gattd.Error.QueueFull``), `message` its text.
    Each name of docs/control-api.md has its own subclass; a name this library does not know
    (a newer gattd) is a plain GattdError carrying it."""

    dbus_name: ClassVar[str] = ""
    _by_name: ClassVar[Dict[str, Type["GattdError"]]] = {}

    def __init__(self, message: str, name: Optional[str] = None) -> None:
        self.name = name or self.dbus_name
        self.message = message
        super().__init__("%s: %s" % (self.name, message) if self.name else message)

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if cls.dbus_name:
            GattdError._by_name[cls.dbus_name] = cls

    @staticmethod
    def from_dbus(name: str, message: str) -> "GattdError":
        """The exception for D-Bus error `name` with `message`."""
        cls = GattdError._by_name.get(name)
        if cls is AccessDenied:
            return AccessDenied.explained(message)
        if cls is None:
            return GattdError(message, name)
        return cls(message, name)


_E = "org.gattd.Error."


class UnknownCharacteristic(GattdError):
    """No characteristic has that id."""
    dbus_name = _E + "UnknownCharacteristic"


class UnknownAdvertisement(GattdError):
    """No advertisement has that id."""
    dbus_name = _E + "UnknownAdvertisement"


class InvalidValueLength(GattdError):
    """The value's length lies outside the characteristic's MinLength...MaxLength."""
    dbus_name = _E + "InvalidValueLength"


class NotSaved(GattdError):
    """The state file could not be written; nothing changed."""
    dbus_name = _E + "NotSaved"


class InvalidAdvertisement(GattdError):
    """set_advertisement_data: the changes break the rules or the byte budget."""
    dbus_name = _E + "InvalidAdvertisement"


class AlreadyClaimed(GattdError):
    """Another program's handler serves one of the ids."""
    dbus_name = _E + "AlreadyClaimed"


class NotRegistered(GattdError):
    """Unregistering a handler that is not registered."""
    dbus_name = _E + "NotRegistered"


class QueueFull(GattdError):
    """delivery "all": the queue is full, nothing was stored; wait for ready()."""
    dbus_name = _E + "QueueFull"


class PairingUnavailable(GattdError):
    """gattd does not pair in the way the call needs."""
    dbus_name = _E + "PairingUnavailable"


class NoPendingConfirmation(GattdError):
    """No pairing waits for a decision from that central."""
    dbus_name = _E + "NoPendingConfirmation"


class UnknownBond(GattdError):
    """bluetoothd keeps no bond with that address."""
    dbus_name = _E + "UnknownBond"


class UnknownCentral(GattdError):
    """No connected central has that address."""
    dbus_name = _E + "UnknownCentral"


class CannotTarget(GattdError):
    """set(..., centrals=...): the value cannot reach exactly those centrals; nothing was sent."""
    dbus_name = _E + "CannotTarget"


class Failed(GattdError):
    """Anything else; the message says what."""
    dbus_name = _E + "Failed"


class InvalidArgs(GattdError):
    """Arguments gattd refuses (an unknown option, something that is not an address)."""
    dbus_name = "org.freedesktop.DBus.Error.InvalidArgs"


class AccessDenied(GattdError):
    """The bus policy does not let this program talk to gattd: it must run as root or as a
    member of group ``gattd`` (systemd/org.gattd.conf)."""
    dbus_name = "org.freedesktop.DBus.Error.AccessDenied"

    @classmethod
    def explained(cls, message: str) -> "AccessDenied":
        return cls("this program may not talk to gattd: run it as root or as a member of group gattd "
                   "(adduser USER gattd, then log in again); the bus said: %s" % message, cls.dbus_name)


class NotRunning(GattdError):
    """gattd is not on the bus (not running, or running without its control API)."""
    dbus_name = "org.freedesktop.DBus.Error.ServiceUnknown"


class NoReply(GattdError):
    """gattd did not answer in time."""
    dbus_name = "org.freedesktop.DBus.Error.NoReply"


GattdError._by_name["org.freedesktop.DBus.Error.NameHasNoOwner"] = NotRunning


_ATT_NAMES = {
    0x02: "ReadNotPermitted",
    0x03: "WriteNotPermitted",
    0x06: "RequestNotSupported",
    0x07: "InvalidOffset",
    0x08: "InsufficientAuthorization",
    0x0D: "InvalidValueLength",
    0x0E: "Unlikely",
}
_ATT_CODES = {name: code for code, name in _ATT_NAMES.items()}


class AttError(Exception):
    """Raised by a read or write handler: the central gets this ATT error.

    ``AttError(0x80)`` ... ``AttError(0x9F)`` are the profile's own (application) errors;
    the standard ones a handler may give are 0x02 read not permitted, 0x03 write not
    permitted, 0x06 request not supported, 0x07 invalid offset, 0x08 insufficient
    authorization, 0x0D invalid value length, 0x0E unlikely; also by name:
    ``AttError("WriteNotPermitted")``. Anything else is refused here (ValueError), as gattd
    would turn it into 0x0E."""

    READ_NOT_PERMITTED: ClassVar[int] = 0x02
    WRITE_NOT_PERMITTED: ClassVar[int] = 0x03
    REQUEST_NOT_SUPPORTED: ClassVar[int] = 0x06
    INVALID_OFFSET: ClassVar[int] = 0x07
    INSUFFICIENT_AUTHORIZATION: ClassVar[int] = 0x08
    INVALID_VALUE_LENGTH: ClassVar[int] = 0x0D
    UNLIKELY: ClassVar[int] = 0x0E

    def __init__(self, code: Union[int, str], message: str = "") -> None:
        if isinstance(code, str):
            if code not in _ATT_CODES:
                raise ValueError("unknown ATT error name %r (one of %s)" % (code, ", ".join(sorted(_ATT_CODES))))
            code = _ATT_CODES[code]
        if not (code in _ATT_NAMES or 0x80 <= code <= 0x9F):
            raise ValueError("ATT error 0x%02X cannot be given by a handler: use 0x80...0x9F or one of %s"
                             % (code, ", ".join("0x%02X" % c for c in sorted(_ATT_NAMES))))
        self.code = code
        self.message = message or "ATT error 0x%02X" % code
        super().__init__(self.message)

    @property
    def dbus_name(self) -> str:
        """The error name gattd reads (docs/control-api.md, RegisterHandler)."""
        if self.code in _ATT_NAMES:
            return "org.gattd.Att." + _ATT_NAMES[self.code]
        return "org.gattd.Att.Application0x%02X" % self.code
