# SPDX-License-Identifier: MIT
"""Events: gattd's signals (docs/control-api.md, "Signals") as Python values.

Each class is one signal; its fields are the signal's arguments in Python types, plus the
central's ``address`` where the signal names a central by its object path (the address is
the one bluetoothd gives: from the signal when gattd sends it, else looked up through the
control API, never cut out of the path; None when no connected central has that path). `GattdStarted` and `GattdStopped` are this
library's own: gattd took or left its bus name.

A signal this library does not know yet (a newer gattd) arrives as `Signal` with its
member name and raw arguments, so a program keeps running. Adding an event is one class
and one row of `SIGNALS` in this file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

__all__ = [
    "Event", "ValueWritten", "ValueChanged", "ReadyToUpdate", "SubscriptionChanged",
    "CentralSubscriptionChanged", "CentralConnected", "CentralDisconnected", "CentralAddressChanged",
    "AdapterChanged", "ChannelOpened", "ChannelClosed",
    "AdvertisementChanged", "PasskeyDisplayed", "PairingConfirmation", "PairingChanged",
    "GattdStarted", "GattdStopped", "Signal",
]


@dataclass(frozen=True)
class Event:
    """Base of every event."""


@dataclass(frozen=True)
class ValueWritten(Event):
    """A central's accepted write; `value` is the whole value after it."""
    id: str
    value: bytes
    device: str
    address: Optional[str] = None


@dataclass(frozen=True)
class ValueChanged(Event):
    """A characteristic's value changed; origin: central, control, timer, restored, configuration."""
    id: str
    value: bytes
    origin: str


@dataclass(frozen=True)
class ReadyToUpdate(Event):
    """A refused (QueueFull) stream has room again."""
    id: str


@dataclass(frozen=True)
class SubscriptionChanged(Event):
    """The first central subscribed (True) or the last one left (False)."""
    id: str
    notifying: bool


@dataclass(frozen=True)
class CentralSubscriptionChanged(Event):
    """One central subscribed to or left a characteristic."""
    id: str
    device: str
    subscribed: bool
    address: Optional[str] = None


@dataclass(frozen=True)
class CentralConnected(Event):
    """A central connected; `info` holds Address, Name, MTU as gattd knows them."""
    device: str
    address: Optional[str]
    name: Optional[str] = None
    mtu: Optional[int] = None
    info: Dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class CentralDisconnected(Event):
    """A central disconnected."""
    device: str
    address: Optional[str]
    name: Optional[str] = None
    mtu: Optional[int] = None
    info: Dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class CentralAddressChanged(Event):
    """A connected central is named by another address now: it bonded over a private
    address and bluetoothd gives its identity (docs/control-api.md, "How centrals are
    named"). `device` stays the same object; `info` holds Address, AddressType,
    OldAddress, OldAddressType, Name, MTU as gattd knows them."""
    device: str
    address: Optional[str]
    old_address: Optional[str]
    name: Optional[str] = None
    info: Dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class AdapterChanged(Event):
    """state: present, gone, powered, unpowered."""
    adapter: str
    state: str


@dataclass(frozen=True)
class AdvertisementChanged(Event):
    """An advertisement's state, in GetStatus's words."""
    id: str
    state: str


@dataclass(frozen=True)
class PasskeyDisplayed(Event):
    """display-passkey: the passkey the person at the central must type."""
    device: str
    address: str
    passkey: str


@dataclass(frozen=True)
class PairingConfirmation(Event):
    """numeric-comparison: answer with confirm_pairing(address) or reject_pairing(address)."""
    device: str
    address: str
    passkey: str


@dataclass(frozen=True)
class PairingChanged(Event):
    """The pairing window opened (seconds_left its length) or closed (0)."""
    open: bool
    seconds_left: int


@dataclass(frozen=True)
class ChannelOpened(Event):
    """A central opened L2CAP channel `channel` (docs/channels.md); `info` holds PSM,
    Address, AddressType, SendMTU, ReceiveMTU, TakenBy, Device as gattd gives them."""
    channel: str
    address: Optional[str]
    info: Dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class ChannelClosed(Event):
    """A connection gattd relays on `channel` closed; `reason` says why, `info` as in
    ChannelOpened with BytesIn and BytesOut."""
    channel: str
    address: Optional[str]
    reason: Optional[str] = None
    info: Dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class GattdStarted(Event):
    """gattd took its bus name (at the program's start or after a restart); handlers and
    the event subscription are registered again before this is delivered."""
    owner: str


@dataclass(frozen=True)
class GattdStopped(Event):
    """gattd left the bus; calls fail with NotRunning until GattdStarted."""


@dataclass(frozen=True)
class Signal(Event):
    """A signal this version of the library does not know."""
    member: str
    args: Tuple[Any, ...]


def _central(cls: Any) -> Callable[[List[Any]], Event]:
    def make(body: List[Any]) -> Event:
        info = {k: getattr(v, "value", v) for k, v in body[1].items()}
        event: Event = cls(str(body[0]), info.get("Address"), info.get("Name"), info.get("MTU"), info)
        return event
    return make


def _channel_opened(body: List[Any]) -> Event:
    info = {k: getattr(v, "value", v) for k, v in body[1].items()}
    return ChannelOpened(str(body[0]), info.get("Address"), info)


def _channel_closed(body: List[Any]) -> Event:
    info = {k: getattr(v, "value", v) for k, v in body[1].items()}
    return ChannelClosed(str(body[0]), info.get("Address"), info.get("Reason"), info)


def _address_changed(body: List[Any]) -> Event:
    info = {k: getattr(v, "value", v) for k, v in body[1].items()}
    return CentralAddressChanged(str(body[0]), info.get("Address"), info.get("OldAddress"), info.get("Name"), info)


# member -> how its body becomes an event (device paths get their address afterwards).
SIGNALS: Dict[str, Callable[[List[Any]], Event]] = {
    # gattd gives the central's address as a fourth argument (an older one did not)
    "ValueWritten": lambda b: ValueWritten(b[0], bytes(b[1]), b[2], (b[3] or None) if len(b) > 3 else None),
    "ValueChanged": lambda b: ValueChanged(b[0], bytes(b[1]), b[2]),
    "ReadyToUpdate": lambda b: ReadyToUpdate(b[0]),
    "SubscriptionChanged": lambda b: SubscriptionChanged(b[0], bool(b[1])),
    "CentralSubscriptionChanged": lambda b: CentralSubscriptionChanged(b[0], b[1], bool(b[2])),
    "CentralConnected": _central(CentralConnected),
    "CentralDisconnected": _central(CentralDisconnected),
    "CentralAddressChanged": _address_changed,
    "AdapterChanged": lambda b: AdapterChanged(b[0], b[1]),
    "AdvertisementChanged": lambda b: AdvertisementChanged(b[0], b[1]),
    "PasskeyDisplayed": lambda b: PasskeyDisplayed(b[0], b[1], b[2]),
    "PairingConfirmation": lambda b: PairingConfirmation(b[0], b[1], b[2]),
    "PairingChanged": lambda b: PairingChanged(bool(b[0]), int(b[1])),
    "ChannelOpened": _channel_opened,
    "ChannelClosed": _channel_closed,
}
