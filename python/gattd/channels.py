# SPDX-License-Identifier: MIT
"""L2CAP channels taken over the control API (docs/channels.md, docs/python.md "Channels").

A program that takes a channel gets each connection a central opens as a `socket.socket`
(``SOCK_SEQPACKET``: one ``recv`` is one SDU from the central, one ``send`` one SDU to it,
at most `ChannelRequest.send_mtu` bytes), with what gattd says about it as a
`ChannelRequest`."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, Optional, Union

__all__ = ["ChannelRequest", "ChannelTaker", "ChannelDecider"]

SOL_BLUETOOTH = 274
BT_SNDMTU = 12


@dataclass(frozen=True)
class ChannelRequest:
    """One connection on L2CAP channel `channel` (org.gattd.ChannelTaker1.Open's `info`).

    `address` and `address_type` (``public`` or ``random``) name the central as the kernel
    does (its identity address once paired); `device` is bluetoothd's object for it, None
    when bluetoothd has none. `send_mtu` is the largest SDU the central takes (read from
    the socket once the channel is accepted), `receive_mtu` the largest it may send: read
    with ``recv(request.receive_mtu)`` so that no SDU is cut. `serial` is gattd's number
    for the connection (its log says it)."""
    channel: str
    serial: int
    psm: int
    address: str
    address_type: str
    device: Optional[str] = None
    send_mtu: int = 0
    receive_mtu: int = 0
    info: Dict[str, Any] = field(default_factory=dict, compare=False)


ChannelTaker = Callable[[socket.socket, ChannelRequest], Union[None, Awaitable[None]]]
ChannelDecider = Callable[[ChannelRequest], Union[bool, Awaitable[bool]]]


def object_path(base: str, channel: str) -> str:
    """The taker object of `channel` under `base`: one object per channel (Open does not
    name the channel), its id escaped to D-Bus path characters (``_`` + hex for others)."""
    escaped = "".join(chr(b) if chr(b).isalnum() and b < 128 else "_%02x" % b for b in channel.encode())
    return "%s/channel/%s" % (base, escaped or "_")


def request_of(channel: str, info: Dict[str, Any]) -> ChannelRequest:
    return ChannelRequest(channel=channel, serial=int(info.get("Serial", 0)), psm=int(info.get("PSM", 0)),
                          address=str(info.get("Address", "")), address_type=str(info.get("AddressType", "")),
                          device=info.get("Device") or None, send_mtu=int(info.get("SendMTU", 0)),
                          receive_mtu=int(info.get("ReceiveMTU", 0)), info=info)


def send_mtu(sock: socket.socket) -> Optional[int]:
    """BT_SNDMTU of an accepted channel, None when the socket does not say."""
    try:
        return int.from_bytes(sock.getsockopt(SOL_BLUETOOTH, BT_SNDMTU, 2), "little")
    except OSError:
        return None
