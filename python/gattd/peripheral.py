# SPDX-License-Identifier: MIT
"""`Peripheral`: one program's connection to gattd's control API (docs/python.md)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import json
import logging
import re
import os
import signal
import socket
import sys
from dataclasses import dataclass
from typing import (Any, Awaitable, Callable, Dict, Iterable, List, Optional, Set, Tuple, Type,
                    TypeVar, Union)

from dbus_fast import BusType, Message, MessageType, Variant
from dbus_fast.aio.message_bus import MessageBus
from dbus_fast.errors import DBusError

from . import channels as ch
from . import events as ev
from .channels import ChannelDecider, ChannelRequest, ChannelTaker
from .errors import AccessDenied, AttError, GattdError, NotRunning, QueueFull

__all__ = ["Peripheral", "Request", "EventStream", "ReadHandler", "WriteHandler", "ChannelRequest"]

log = logging.getLogger("gattd")

BUS_NAME = "org.gattd"
PATH = "/org/gattd"
MANAGER = "org.gattd.Manager1"
HANDLER = "org.gattd.Handler1"
CHANNEL_TAKER = "org.gattd.ChannelTaker1"
DBUS = "org.freedesktop.DBus"
_INSTANCE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# As gattd's one check (ControlRequest.isAddress): six pairs of ASCII hex digits, either
# case, and nothing else (`fullmatch`: `$` would let a final newline through).
_ADDRESS = re.compile(r"[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}")

Bytes = Union[bytes, bytearray, memoryview]


@dataclass(frozen=True)
class Request:
    """What gattd says about a central's read or write (docs/control-api.md, Handler1).

    `device` is bluetoothd's object path of the central and `address` its address as
    bluetoothd gives it (``AA:BB:CC:DD:EE:FF``), None when bluetoothd did not name it or it
    is no longer connected. `expects_reply` is False for a Write Command."""
    id: str
    offset: int = 0
    device: Optional[str] = None
    address: Optional[str] = None
    mtu: Optional[int] = None
    link: Optional[str] = None
    expects_reply: bool = True


ReadHandler = Callable[[Request], Union[Bytes, str, Awaitable[Union[Bytes, str]]]]
WriteHandler = Callable[[bytes, Request], Union[None, Awaitable[None]]]
F = TypeVar("F", bound=Callable[..., Any])
E = TypeVar("E", bound=ev.Event)


def bus_name(instance: Optional[str]) -> str:
    """The bus name of gattd instance `instance` (`gattd@hci1` is org.gattd.hci1)."""
    if not instance:
        return BUS_NAME
    if not _INSTANCE.match(instance):
        raise ValueError("instance %r: letters, digits and _ only, not starting with a digit" % instance)
    return BUS_NAME + "." + instance


def _plain(value: Any) -> Any:
    """D-Bus values as plain Python: variants unwrapped, byte arrays as bytes."""
    if isinstance(value, Variant):
        return _plain(value.value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _address(address: str) -> str:
    if not _ADDRESS.fullmatch(address):
        raise ValueError("%r is not a Bluetooth address (AA:BB:CC:DD:EE:FF)" % address)
    return address.upper()


def _bytes(value: Union[Bytes, str]) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError("a value is bytes (or str, sent as UTF-8), not %s" % type(value).__name__)


class Peripheral:
    """A program's side of gattd: values, handlers, events, streams, centrals, bonds,
    pairing, advertising and L2CAP channels, on the system bus (or `bus_address`).

    ``instance="hci1"`` talks to ``gattd@hci1`` (bus name ``org.gattd.hci1``) instead of
    the plain gattd.service. Use it as ``async with Peripheral() as app:`` or call
    ``run()``; handlers may be declared before or after connecting."""

    def __init__(self, instance: Optional[str] = None, bus_address: Optional[str] = None,
                 handler_path: str = "/org/gattd/program") -> None:
        self.bus_name = bus_name(instance)
        self.instance = instance
        self._bus_address = bus_address
        self._handler_path = handler_path
        self._bus: Optional[MessageBus] = None
        self._owner: Optional[str] = None
        self._reads: Dict[str, ReadHandler] = {}
        self._writes: Dict[str, WriteHandler] = {}
        self._registered: Set[Tuple[str, str]] = set()  # (id, "read" or "write") gattd has
        self._channels: Dict[str, Tuple[ChannelTaker, Optional[ChannelDecider]]] = {}
        self._channel_paths: Dict[str, str] = {}  # taker object path -> channel id
        self._channels_registered: Set[str] = set()  # channel ids gattd has from us
        self._subscribed = False
        self._subscribing: Optional["asyncio.Future[None]"] = None
        self._want_events = False
        self._listeners: List["asyncio.Queue[ev.Event]"] = []
        self._callbacks: List[Tuple[type, Callable[[Any], Any]]] = []
        self._addresses: Dict[str, Optional[str]] = {}
        self._ready_count: Dict[str, int] = {}
        self._ready_changed: Optional[asyncio.Condition] = None
        self._signals: "Optional[asyncio.Queue[Message]]" = None
        self._refused_at: Dict[str, int] = {}
        self._tasks: Set["asyncio.Task[Any]"] = set()
        self._failure: Optional[BaseException] = None
        self._failed: Optional[asyncio.Event] = None
        self._started: Optional[asyncio.Event] = None
        self._start_callbacks: List[Callable[[], Any]] = []

    # ---- connecting -------------------------------------------------------------------

    async def connect(self) -> "Peripheral":
        """Connects to the bus, follows gattd's bus name, and registers what was declared
        once gattd is there. Does not wait for gattd (see `wait_started`)."""
        if self._bus is not None:
            return self
        self._signals = asyncio.Queue()
        self._ready_changed = asyncio.Condition()
        self._failed = asyncio.Event()
        self._started = asyncio.Event()
        if self._bus_address:
            bus = MessageBus(bus_address=self._bus_address, negotiate_unix_fd=True)
        else:
            bus = MessageBus(bus_type=BusType.SYSTEM, negotiate_unix_fd=True)  # channels' descriptors
        self._bus = await bus.connect()
        self._bus.add_message_handler(self._on_message)
        self._spawn(self._dispatch_signals())
        await self._bus_call(DBUS, "/org/freedesktop/DBus", DBUS, "AddMatch", "s",
                             ["type='signal',sender='%s',path='/org/freedesktop/DBus',interface='%s',"
                              "member='NameOwnerChanged',arg0='%s'" % (DBUS, DBUS, self.bus_name)])
        await self._bus_call(DBUS, "/org/freedesktop/DBus", DBUS, "AddMatch", "s",
                             ["type='signal',sender='%s',path='%s',interface='%s'" % (self.bus_name, PATH, MANAGER)])
        try:
            reply = await self._bus_call(DBUS, "/org/freedesktop/DBus", DBUS, "GetNameOwner", "s", [self.bus_name])
            owner: Optional[str] = reply.body[0]
        except GattdError:
            owner = None
        if owner:
            await self._appeared(owner)
        return self

    async def close(self) -> None:
        """Unregisters the handlers and channel takers (when gattd is there), closes the
        channels this program holds, and leaves the bus."""
        if self._bus is None:
            return
        if self._owner and self._registered:
            with contextlib.suppress(GattdError, OSError, asyncio.TimeoutError):
                await self.call("UnregisterHandler", "o", [self._handler_path])
        for channel in sorted(self._channels_registered if self._owner else ()):
            with contextlib.suppress(GattdError, OSError, asyncio.TimeoutError):
                await self.call("UnregisterChannel", "s", [channel])
        self._channels_registered.clear()
        for task in list(self._tasks):
            task.cancel()
        self._bus.disconnect()
        self._bus = None
        self._owner = None

    async def __aenter__(self) -> "Peripheral":
        return await self.connect()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def running(self) -> bool:
        """gattd owns its bus name now."""
        return self._owner is not None

    async def wait_started(self, timeout: Optional[float] = None) -> None:
        """Waits until gattd is on the bus and what was declared is registered."""
        assert self._started is not None, "connect() first"
        await asyncio.wait_for(self._started.wait(), timeout)

    async def serve(self) -> None:
        """Serves until cancelled: waits for gattd, registers the handlers again each time
        gattd starts, and raises what makes serving impossible (AccessDenied, a claim
        another program holds)."""
        await self.connect()
        if self._owner is None:
            log.info("waiting for %s on the bus", self.bus_name)
        assert self._failed is not None and self._bus is not None
        gone = asyncio.ensure_future(self._bus.wait_for_disconnect())  # type: ignore[no-untyped-call]
        failed = asyncio.ensure_future(self._failed.wait())
        try:
            await asyncio.wait({gone, failed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            failed.cancel()
        if self._failure is not None:
            raise self._failure
        raise ConnectionError("the system bus connection closed")

    def run(self, main: Optional[Callable[["Peripheral"], Awaitable[Any]]] = None) -> None:
        """Serves until SIGINT or SIGTERM (exits 0), next to `main(self)` when given (it
        ending ends the program). A reason the program cannot serve (AccessDenied, a claim
        another program holds, gattd refusing an id) is printed on stderr, exit status 1."""
        async def body() -> None:
            loop = asyncio.get_running_loop()
            stop = asyncio.Event()
            for signo in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signo, stop.set)
            try:
                await self.connect()
                waits = [asyncio.ensure_future(self.serve()), asyncio.ensure_future(stop.wait())]
                if main is not None:
                    waits.append(asyncio.ensure_future(main(self)))
                done, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                for task in pending:
                    task.cancel()
                for task in done:
                    task.result()
            finally:
                await self.close()
        try:
            asyncio.run(body())
        except (GattdError, ConnectionError, OSError) as error:
            print("%s: %s" % (sys.argv[0].rsplit("/", 1)[-1] or "gattd", error), file=sys.stderr)
            raise SystemExit(1)

    # ---- values -----------------------------------------------------------------------

    async def characteristics(self) -> List[Dict[str, Any]]:
        """ListCharacteristics: one dict per characteristic (Id, Service, UUID, Flags,
        Value, Notifying, Persistent, MinLength, MaxLength, Type, Handler, ...)."""
        found: List[Dict[str, Any]] = _plain((await self.call("ListCharacteristics")).body[0])
        return found

    async def get(self, id: str) -> bytes:
        """The current value of characteristic `id`."""
        return bytes((await self.call("GetValue", "s", [id])).body[0])

    async def set(self, id: str, value: Union[Bytes, str], centrals: Optional[Iterable[str]] = None) -> None:
        """Sets `id` (SetValue). With `centrals` (addresses), sends the value to those
        subscribed centrals only and stores nothing (SetValueWithOptions): CannotTarget
        when it cannot reach exactly them. A full delivery-"all" queue raises QueueFull
        (use `update`/`send` for streams)."""
        if centrals is None:
            seen = self._ready_count.get(id, 0)
            try:
                await self.call("SetValue", "say", [id, _bytes(value)])
            except QueueFull:
                self._refused_at[id] = seen  # ready(id) waits for the room
                raise
            return
        targets = [_address(a) for a in centrals]
        await self.call("SetValueWithOptions", "saya{sv}", [id, _bytes(value), {"centrals": Variant("as", targets)}])

    # ---- streams ----------------------------------------------------------------------

    async def update(self, id: str, value: Union[Bytes, str]) -> bool:
        """Queues `value` on a `delivery: "all"` characteristic: True when gattd took it,
        False when its queue is full (nothing stored: call `ready(id)`, then update again
        with the same value). CoreBluetooth's updateValue."""
        await self._ensure_subscribed()
        seen = self._ready_count.get(id, 0)
        try:
            await self.call("SetValue", "say", [id, _bytes(value)])
            return True
        except QueueFull:
            self._refused_at[id] = seen
            return False

    async def ready(self, id: str, timeout: Optional[float] = None) -> None:
        """Returns once gattd has room again for `id` after `update` returned False
        (ReadyToUpdate; also when gattd restarted, its queue then empty).
        CoreBluetooth's peripheralManagerIsReady(toUpdateSubscribers:)."""
        assert self._ready_changed is not None, "connect() first"
        refused = self._refused_at.get(id)
        if refused is None:
            return
        seen: int = refused
        async def room() -> None:
            async with self._ready_changed:  # type: ignore[union-attr]
                await self._ready_changed.wait_for(  # type: ignore[union-attr]
                    lambda: self._ready_count.get(id, 0) > seen)
        await asyncio.wait_for(room(), timeout)
        self._refused_at.pop(id, None)

    async def send(self, id: str, value: Union[Bytes, str]) -> None:
        """`update` until gattd takes `value`, waiting for `ready` in between: no value is
        lost and the order is kept."""
        while not await self.update(id, value):
            await self.ready(id)

    # ---- handlers ---------------------------------------------------------------------

    def on_read(self, *ids: str) -> Callable[[F], F]:
        """Decorator: `func(request) -> bytes` (or str, or a coroutine) answers every read of
        `ids`. Raise AttError to refuse; any other exception refuses with 0x0E (logged)."""
        def register(func: F) -> F:
            self.handle(*ids, read=func)
            return func
        return register

    def on_write(self, *ids: str) -> Callable[[F], F]:
        """Decorator: `func(value, request)` (or a coroutine) decides every write of `ids`:
        returning accepts it (gattd stores and notifies it), AttError refuses it."""
        def register(func: F) -> F:
            self.handle(*ids, write=func)
            return func
        return register

    def handle(self, *ids: str, read: Optional[ReadHandler] = None, write: Optional[WriteHandler] = None) -> None:
        """Callback form of on_read/on_write. Registers with gattd now when connected."""
        if not ids:
            raise ValueError("name at least one characteristic id")
        for id in ids:
            if read is not None:
                self._reads[id] = read
            if write is not None:
                self._writes[id] = write
        if self._owner is not None:
            self._spawn(self._register_checked())

    async def register(self) -> None:
        """Registers the declared handlers and channel takers now (connect and GattdStarted
        do it by themselves); raises UnknownCharacteristic, AlreadyClaimed or (a channel gattd
        cannot give) Failed."""
        wanted = {(i, "read") for i in self._reads} | {(i, "write") for i in self._writes}
        new = wanted - self._registered
        if new:
            await self._register_handlers(new)
        for channel in sorted(set(self._channels) - self._channels_registered):
            await self.call("RegisterChannel", "so", [channel, ch.object_path(self._handler_path, channel)])
            self._channels_registered.add(channel)

    async def _register_handlers(self, new: Set[Tuple[str, str]]) -> None:
        # RegisterHandler's `operations`: an id is claimed for what was declared for it, so
        # a write-only handler leaves the reads to gattd's store and a read-only one leaves
        # the writes to gattd (checked, decided by an onWrite hook, stored) as without one.
        groups: Dict[Tuple[str, ...], List[str]] = {}
        for id in sorted({i for i, _ in new}):
            operations = tuple(op for op in ("read", "write") if (id, op) in new)
            groups.setdefault(operations, []).append(id)
        for operations, ids in sorted(groups.items()):
            await self.call("RegisterHandler", "oasa{sv}",
                            [self._handler_path, ids, {"operations": Variant("as", list(operations))}])
            self._registered.update((i, op) for i in ids for op in operations)

    async def unregister(self) -> None:
        """Ends every claim of this program; gattd serves its own values again."""
        await self.call("UnregisterHandler", "o", [self._handler_path])
        self._registered.clear()
        self._reads.clear()
        self._writes.clear()

    # ---- L2CAP channels ---------------------------------------------------------------

    def on_channel(self, channel: str, accept: Optional[ChannelDecider] = None) -> Callable[[F], F]:
        """Decorator: `func(sock, request)` (or a coroutine) takes every connection a
        central opens on L2CAP channel `channel` (one of the definition's `channels` without
        a `program`). `sock` is a non-blocking ``SOCK_SEQPACKET`` `socket.socket`, already
        accepted; the library closes it when `func` returns or raises (``sock.detach()``
        keeps it). `accept(request) -> bool` (or a coroutine), when given, decides first:
        False or an exception refuses the connection. Registered with gattd at connect, and
        again after gattd restarts; while this program is not registered gattd refuses the
        channel's connections."""
        def register(func: F) -> F:
            self._declare_channel(channel, func, accept)
            if self._owner is not None:
                self._spawn(self._register_checked())
            return func
        return register

    async def take_channel(self, channel: str, func: ChannelTaker,
                           accept: Optional[ChannelDecider] = None) -> None:
        """Callback form of on_channel. When gattd is there, registers now and raises what
        gattd refuses (Failed: no such channel, it runs its own program, it does not listen;
        AlreadyClaimed: another program takes it), declaring nothing then."""
        self._declare_channel(channel, func, accept)
        if self._owner is None:
            return
        try:
            await self.register()
        except GattdError:
            if channel not in self._channels_registered:
                self._forget_channel(channel)
            raise

    async def release_channel(self, channel: str) -> None:
        """Stops taking `channel` (UnregisterChannel): gattd refuses its connections from
        now on; channels already taken stay open. NotRegistered when this program does not
        take it."""
        self._forget_channel(channel)
        self._channels_registered.discard(channel)
        await self.call("UnregisterChannel", "s", [channel])

    async def channels(self) -> List[Dict[str, Any]]:
        """ListChannels: Id, Service, Security, Listening, PSM, Error, Program or Taker,
        Open (the connections gattd relays)."""
        found: List[Dict[str, Any]] = _plain((await self.call("ListChannels")).body[0])
        return found

    def _declare_channel(self, channel: str, func: ChannelTaker, accept: Optional[ChannelDecider]) -> None:
        if not channel:
            raise ValueError("name the channel (its id in the definition)")
        self._channels[channel] = (func, accept)
        self._channel_paths[ch.object_path(self._handler_path, channel)] = channel

    def _forget_channel(self, channel: str) -> None:
        self._channels.pop(channel, None)
        self._channel_paths.pop(ch.object_path(self._handler_path, channel), None)

    async def _open_channel(self, call: Message) -> None:
        """org.gattd.ChannelTaker1.Open(h channel, a{sv} info): decide, accept, reply, then
        run the taker with the socket. Fail closed: anything that goes wrong before the
        reply refuses the connection."""
        fds = list(call.unix_fds or [])
        index = call.body[0] if call.body and isinstance(call.body[0], int) else -1
        fd = fds[index] if 0 <= index < len(fds) else -1
        for other in fds:
            if other != fd:
                os.close(other)
        channel = self._channel_paths.get(call.path or "")
        entry = self._channels.get(channel) if channel is not None else None
        if fd < 0 or entry is None or channel is None:
            if fd >= 0:
                os.close(fd)
            self._reply(Message.new_error(call, "org.gattd.Error.Failed",
                                          "no descriptor in Open" if fd < 0 else "this program no longer takes it"))
            return
        func, decide = entry
        sock: Optional[socket.socket] = None
        try:
            sock = socket.socket(fileno=fd)
            sock.setblocking(False)
            request = ch.request_of(channel, _plain(call.body[1]) if len(call.body) > 1 else {})
            if decide is not None:
                verdict = decide(request)
                if inspect.isawaitable(verdict):
                    verdict = await verdict
                if not verdict:
                    raise _Declined("the program refused the connection")
            mtu = ch.send_mtu(sock)
            if mtu:
                request = dataclasses.replace(request, send_mtu=mtu)
        except Exception as error:  # fail closed: refused, gattd closes the channel
            if sock is not None:
                sock.close()
            else:
                os.close(fd)
            if not isinstance(error, _Declined):
                log.exception("accepting a connection on channel %s failed; it is refused", channel)
            self._reply(Message.new_error(call, "org.gattd.Error.Failed", "%s: %s" % (type(error).__name__, error)
                                          if not isinstance(error, _Declined) else str(error)))
            return
        self._reply(Message.new_method_return(call))
        await self._run_taker(func, sock, request)

    async def _run_taker(self, func: ChannelTaker, sock: socket.socket, request: ChannelRequest) -> None:
        try:
            result = func(sock, request)
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("taker of channel %s failed; the channel is closed (serial %d, %s)",
                          request.channel, request.serial, request.address)
        finally:
            sock.close()

    def _reply(self, message: Message) -> None:
        if self._bus is not None:
            self._bus.send(message)

    # ---- events -----------------------------------------------------------------------

    def events(self) -> "EventStream":
        """Every event from now on, in order (gattd's signals, GattdStarted/Stopped), as an
        async iterator: ``async for event in app.events():``. Events are kept from this
        call on; `await app.subscribe()` returns once gattd sends them (see there)."""
        stream = EventStream(self)
        self._listeners.append(stream._queue)
        self._want_events = True
        if self._owner is not None:
            self._spawn(self._ensure_subscribed())
        return stream

    async def subscribe(self) -> None:
        """Asks gattd for its signals now (events(), on() and update() do it by themselves)
        and returns once it has answered: an event caused after this returns is never
        missed. gattd sends signals only while a program is subscribed."""
        self._want_events = True
        await self._ensure_subscribed()

    def on(self, kind: Type[E]) -> Callable[[F], F]:
        """Decorator: `func(event)` (or a coroutine) for every event of class `kind`
        (`gattd.ValueWritten`, `gattd.Event` for all)."""
        def register(func: F) -> F:
            self._callbacks.append((kind, func))
            self._want_events = True
            if self._owner is not None:
                self._spawn(self._ensure_subscribed())
            return func
        return register

    def on_start(self, func: F) -> F:
        """Decorator: `func()` each time gattd is there and the handlers are registered."""
        self._start_callbacks.append(func)
        return func

    # ---- centrals, bonds, pairing, advertising, status ----------------------------------

    async def centrals(self) -> List[Dict[str, Any]]:
        """ListCentrals: Device, Address, Name, Paired, Bonded, Trusted, ConnectedSince,
        MTU, MaxUpdateLength, Subscribed."""
        found: List[Dict[str, Any]] = _plain((await self.call("ListCentrals")).body[0])
        for central in found:
            if central.get("Device") and central.get("Address"):
                self._addresses[central["Device"]] = central["Address"]
        return found

    async def disconnect(self, address: str) -> None:
        """Drops the link of connected central `address` (UnknownCentral when none)."""
        await self.call("DisconnectCentral", "s", [_address(address)])

    async def bonds(self) -> List[Dict[str, Any]]:
        """ListBonds: Device, Address, Name, Paired, Bonded, Trusted, Connected."""
        found: List[Dict[str, Any]] = _plain((await self.call("ListBonds")).body[0])
        return found

    async def remove_bond(self, address: str) -> None:
        """Forgets central `address` and its keys (UnknownBond when none)."""
        await self.call("RemoveBond", "s", [_address(address)])

    async def open_pairing(self, seconds: int = 0) -> int:
        """Opens the pairing window (0: the configured length); returns its seconds."""
        return int((await self.call("OpenPairing", "u", [seconds])).body[0])

    async def confirm_pairing(self, address: str = "") -> None:
        """numeric-comparison: the person compared the digits and they match."""
        await self.call("ConfirmPairing", "s", [_address(address) if address else ""])

    async def reject_pairing(self, address: str = "") -> None:
        """numeric-comparison: the digits differ."""
        await self.call("RejectPairing", "s", [_address(address) if address else ""])

    async def start_advertising(self, id: str) -> None:
        await self.call("StartAdvertising", "s", [id])

    async def stop_advertising(self, id: str) -> None:
        await self.call("StopAdvertising", "s", [id])

    async def set_advertisement_data(self, id: str, changes: Dict[str, Any], persist: bool = False) -> None:
        """Changes advertisement `id`'s data on air: `changes` in the definition's syntax,
        None removes a key (InvalidAdvertisement names each problem)."""
        await self.call("SetAdvertisementData", "ssb", [id, json.dumps(changes), persist])

    async def status(self) -> Dict[str, Any]:
        """GetStatus as a dict (Version, Adapter, Registered, Advertisements, ...)."""
        status: Dict[str, Any] = _plain((await self.call("GetStatus")).body[0])
        return status

    # ---- the bus ----------------------------------------------------------------------

    async def call(self, member: str, signature: str = "", body: Optional[List[Any]] = None) -> Message:
        """Any method of org.gattd.Manager1 (for methods newer than this library)."""
        if self._bus is None:
            raise RuntimeError("not connected: use `async with Peripheral()` or connect()")
        if self._owner is None:
            raise NotRunning("%s is not on the bus (gattd not running, or without its control API)" % self.bus_name)
        return await self._bus_call(self.bus_name, PATH, MANAGER, member, signature, body or [])

    async def _bus_call(self, destination: str, path: str, interface: str, member: str, signature: str,
                        body: List[Any]) -> Message:
        assert self._bus is not None
        message = Message(destination=destination, path=path, interface=interface, member=member,
                          signature=signature, body=body)
        try:
            # the bus daemon answers NoReply when gattd does not (its reply_timeout)
            reply = await self._bus.call(message)
        except DBusError as error:
            raise GattdError.from_dbus(str(error.type), error.text) from None
        assert reply is not None
        if reply.message_type == MessageType.ERROR:
            raise GattdError.from_dbus(str(reply.error_name or ""), reply.body[0] if reply.body else "")
        return reply

    def _spawn(self, coroutine: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _fail(self, error: BaseException) -> None:
        log.error("%s", error)
        if self._failure is None:
            self._failure = error
        assert self._failed is not None
        self._failed.set()

    async def _register_checked(self) -> None:
        try:
            await self.register()
        except GattdError as error:
            if not isinstance(error, NotRunning):
                self._fail(error)

    async def _ensure_subscribed(self) -> None:
        self._want_events = True
        if self._subscribed or self._owner is None:
            return
        if self._subscribing is not None:
            await asyncio.shield(self._subscribing)
            return
        self._subscribing = asyncio.get_running_loop().create_future()
        try:
            await self._subscribe_now()
        finally:
            self._subscribing.set_result(None)
            self._subscribing = None

    async def _subscribe_now(self) -> None:
        try:
            await self.call("Subscribe")
            self._subscribed = True
        except AccessDenied as error:
            self._fail(error)
            raise

    async def _appeared(self, owner: str) -> None:
        self._owner = owner
        self._registered.clear()
        self._channels_registered.clear()
        self._subscribed = False
        self._addresses.clear()
        try:
            if self._want_events:
                await self._ensure_subscribed()
            await self.register()
        except NotRunning:
            return
        except GattdError as error:
            self._fail(error)
            return
        await self._bump_all_ready()
        assert self._started is not None
        self._started.set()
        for func in self._start_callbacks:
            result = func()
            if inspect.isawaitable(result):
                await result
        await self._deliver(ev.GattdStarted(owner))

    async def _bump_all_ready(self) -> None:
        assert self._ready_changed is not None
        async with self._ready_changed:
            for id in list(self._refused_at):
                self._ready_count[id] = self._ready_count.get(id, 0) + 1
            self._ready_changed.notify_all()

    def _on_message(self, message: Message) -> Union[bool, Message, None]:
        if message.message_type == MessageType.SIGNAL:
            assert self._signals is not None
            if message.member == "NameOwnerChanged" and message.interface == DBUS and message.sender == DBUS:
                if message.body and message.body[0] == self.bus_name:
                    self._signals.put_nowait(message)
            elif message.interface == MANAGER and message.path == PATH and message.sender == self._owner:
                self._signals.put_nowait(message)
            return None
        if message.message_type == MessageType.METHOD_CALL and message.path == self._handler_path:
            if message.sender != self._owner:
                return Message.new_error(message, AccessDenied.dbus_name,
                                         "only %s calls this program's handlers" % self.bus_name)
            if message.interface in (HANDLER, None) and message.member in ("Read", "Write"):
                self._spawn(self._answer(message))
                return True
            return Message.new_error(message, "org.freedesktop.DBus.Error.UnknownMethod",
                                     "%s has Read and Write only" % HANDLER)
        if message.message_type == MessageType.METHOD_CALL and message.path in self._channel_paths:
            if message.sender != self._owner:
                for fd in message.unix_fds or ():
                    os.close(fd)
                return Message.new_error(message, AccessDenied.dbus_name,
                                         "only %s opens this program's channels" % self.bus_name)
            if message.interface in (CHANNEL_TAKER, None) and message.member == "Open":
                self._spawn(self._open_channel(message))
                return True
            for fd in message.unix_fds or ():
                os.close(fd)
            return Message.new_error(message, "org.freedesktop.DBus.Error.UnknownMethod",
                                     "%s has Open only" % CHANNEL_TAKER)
        return None

    async def _answer(self, call: Message) -> None:
        assert self._bus is not None
        id = call.body[0]
        options = call.body[-1]
        device = _plain(options.get("device"))
        # gattd names the central by bluetoothd's Address (`address`); an older gattd gave
        # only the object, whose address is then looked up.
        address = _plain(options.get("address")) or (await self._address_of(device) if device else None)
        request = Request(id=id, offset=int(_plain(options.get("offset", 0))), device=device,
                          address=address,
                          mtu=_plain(options.get("mtu")), link=_plain(options.get("link")),
                          expects_reply=bool(_plain(options.get("expects-reply", True))))
        try:
            if call.member == "Read":
                read = self._reads.get(id)
                if read is None:
                    raise AttError(AttError.READ_NOT_PERMITTED, "no read handler for %s" % id)
                value = read(request)
                if inspect.isawaitable(value):
                    value = await value
                reply = Message.new_method_return(call, "ay", [_bytes(value)])  # type: ignore[arg-type]
            else:
                write = self._writes.get(id)
                if write is None:
                    raise AttError(AttError.WRITE_NOT_PERMITTED, "no write handler for %s" % id)
                result = write(bytes(call.body[1]), request)
                if inspect.isawaitable(result):
                    await result
                reply = Message.new_method_return(call)
        except AttError as error:
            reply = Message.new_error(call, error.dbus_name, error.message)
        except Exception as error:  # fail closed: a handler that breaks refuses, 0x0E
            log.exception("%s handler for %s failed; the central gets ATT error 0x0E", call.member, id)
            reply = Message.new_error(call, "org.gattd.Att.Unlikely", "%s: %s" % (type(error).__name__, error))
        if self._bus is not None:
            self._bus.send(reply)

    async def _address_of(self, device: str) -> Optional[str]:
        """bluetoothd's Address of `device`, from ListCentrals (asked once per unknown path
        while gattd runs) and CentralConnected."""
        if device not in self._addresses and self._owner is not None:
            with contextlib.suppress(GattdError):
                await self.centrals()
            self._addresses.setdefault(device, None)
        return self._addresses.get(device)

    async def _dispatch_signals(self) -> None:
        assert self._signals is not None
        while True:
            message = await self._signals.get()
            try:
                await self._dispatch(message)
            except Exception:
                log.exception("while handling %s", message.member)

    async def _dispatch(self, message: Message) -> None:
        if message.member == "NameOwnerChanged":
            old, new = message.body[1], message.body[2]
            if old and self._owner is not None:
                self._owner = None
                assert self._started is not None
                self._started.clear()
                self._subscribed = False
                await self._deliver(ev.GattdStopped())
            if new:
                await self._appeared(new)
            return
        make = ev.SIGNALS.get(message.member or "")
        event = make(list(message.body)) if make else ev.Signal(message.member or "", tuple(message.body))
        if isinstance(event, (ev.CentralConnected, ev.CentralAddressChanged)) and event.address:
            self._addresses[event.device] = event.address
        elif isinstance(event, (ev.ValueWritten, ev.CentralSubscriptionChanged)) and event.device \
                and not event.address:
            event = dataclasses.replace(event, address=await self._address_of(event.device))
        if isinstance(event, ev.ReadyToUpdate):
            assert self._ready_changed is not None
            async with self._ready_changed:
                self._ready_count[event.id] = self._ready_count.get(event.id, 0) + 1
                self._ready_changed.notify_all()
        await self._deliver(event)
        if isinstance(event, ev.CentralDisconnected):
            self._addresses.pop(event.device, None)

    async def _deliver(self, event: ev.Event) -> None:
        for queue in self._listeners:
            queue.put_nowait(event)
        for kind, func in self._callbacks:
            if isinstance(event, kind):
                try:
                    result = func(event)
                    if inspect.isawaitable(result):
                        await result
                except Exception:
                    log.exception("event callback for %s failed", type(event).__name__)


class _Declined(Exception):
    """An `accept` decider said no."""


class EventStream:
    """`Peripheral.events()`: an async iterator of events; `close()` (or leaving an
    ``async for``) stops keeping them."""

    def __init__(self, peripheral: Peripheral) -> None:
        self._peripheral = peripheral
        self._queue: "asyncio.Queue[ev.Event]" = asyncio.Queue()

    def __aiter__(self) -> "EventStream":
        return self

    async def __anext__(self) -> ev.Event:
        if self._peripheral._owner is not None and not self._peripheral._subscribed:
            await self._peripheral._ensure_subscribed()
        return await self._queue.get()

    async def next(self, kind: Type[E] = ev.Event, timeout: Optional[float] = None,  # type: ignore[assignment]
                   **fields: Any) -> E:
        """The next event of class `kind` whose attributes equal `fields`
        (``next(gattd.ValueWritten, id="setpoint")``), skipping others; `timeout` in seconds
        raises asyncio.TimeoutError."""
        async def find() -> E:
            while True:
                event = await self.__anext__()
                if isinstance(event, kind) and all(getattr(event, k, None) == v for k, v in fields.items()):
                    return event
        return await asyncio.wait_for(find(), timeout)

    def close(self) -> None:
        with contextlib.suppress(ValueError):
            self._peripheral._listeners.remove(self._queue)
