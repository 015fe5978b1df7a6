# SPDX-License-Identifier: MIT
"""Turning a GetManagedObjects reply into a GATT database, as bluetoothd 5.66 does.

Pure: takes dbus-python values, returns a GattApp or a (message, reason) failure.
Models src/gatt-database.c: client_ready_cb (passes over services, then
characteristics, then descriptors, in reply order), database_add_app (UUID,
Primary, Includes, Handle checks; handle allocation; CCC/CEP insertion).
"""

import dbus

import bluez_rules as rules

SERVICE_IFACE = "org.bluez.GattService1"
CHRC_IFACE = "org.bluez.GattCharacteristic1"
DESC_IFACE = "org.bluez.GattDescriptor1"
PROFILE_IFACE = "org.bluez.GattProfile1"
IGNORED_IFACES = ("org.freedesktop.DBus.Introspectable", "org.freedesktop.DBus.Properties")

NO_OBJECT = "No object received"
NO_VALID_SERVICE = "No valid service object found"
DB_ENTRY_FAILED = "Failed to create entry in database"


class RegistrationFailed(Exception):
    """Registration refused: message is what bluetoothd replies, reason what its log says."""

    def __init__(self, message, reason):
        super().__init__(message)
        self.message = message
        self.reason = reason


class Attribute:
    """One app-provided attribute in the stand-in's database."""

    def __init__(self, kind, path, props):
        self.kind = kind            # "service" | "characteristic" | "descriptor"
        self.path = str(path)
        self.props = props
        self.uuid = None
        self.flags = [str(f) for f in props.get("Flags", [])]
        self.parent = ""
        self.handle = 0
        self.primary = False
        self.includes = []          # included service paths actually created
        self.chrc_flags = None      # rules.ChrcFlags for characteristics
        self.perm = 0
        self.children = []
        self.wants_handle_writeback = "Handle" in props

    def as_dict(self):
        d = {"path": dbus.ObjectPath(self.path), "kind": dbus.String(self.kind),
             "uuid": dbus.String(self.uuid or ""),
             "flags": dbus.Array(self.flags, signature="s"),
             "parent": dbus.ObjectPath(self.parent or "/"),
             "handle": dbus.UInt16(self.handle)}
        if self.kind == "characteristic":
            # what bluetoothd keys the socket paths on: the properties' presence
            d["acquire"] = dbus.Array([name for name in ("NotifyAcquired", "WriteAcquired") if name in self.props],
                                      signature="s")
        if self.kind == "service":
            d["primary"] = dbus.Boolean(self.primary)
            d["includes"] = dbus.Array([dbus.ObjectPath(p) for p in self.includes], signature="o")
        return dbus.Dictionary(d, signature="sv")


def _is_path(v):
    return isinstance(v, dbus.ObjectPath)


class HandleAllocator:
    """Service handle ranges as gatt_db_insert_service places them (5.66 and 5.82 alike).

    Handles 0x0001-0x000b are taken by bluetoothd's own GAP and GATT services. A service
    whose Handle is 0 goes after the highest handle ever used (bluetoothd's next_handle,
    which removals never lower while its own services remain); a requested one goes where
    asked if that range is free, else the insertion fails.
    """

    def __init__(self):
        self.used = [(0x0001, 0x000B)]
        self.next_handle = 0x000C

    def allocate(self, count, requested=0):
        start = requested or self.next_handle
        end = start + count - 1
        if end > 0xFFFF or any(not (end < a or start > b) for a, b in self.used):
            return 0
        self.used.append((start, end))
        self.next_handle = max(self.next_handle, end + 1)
        return start

    def release(self, start):
        self.used = [r for r in self.used if r[0] != start]


class GattApp:
    """A registered application: owner, path, adapter and its attributes in order."""

    def __init__(self, owner, path, adapter):
        self.owner = owner
        self.path = path
        self.adapter = adapter
        self.services = []
        self.by_path = {}
        self.warnings = []
        self.handle_ranges = []

    def attributes(self):
        out = []
        for svc in self.services:
            out.append(svc)
            for chrc in svc.children:
                out.append(chrc)
                out.extend(chrc.children)
        return out

    def remove_service(self, path, allocator):
        svc = self.by_path.get(path)
        if svc is None or svc.kind != "service":
            return False
        self.services.remove(svc)
        for a in [svc] + svc.children + [d for c in svc.children for d in c.children]:
            self.by_path.pop(a.path, None)
        allocator.release(svc.handle)
        return True


def build_app(owner, app_path, adapter, objects, allocator, handles_by_index=False):
    """Parse a GetManagedObjects reply (ordered dict path -> {iface: props}).

    handles_by_index: a characteristic's or descriptor's requested Handle picks its slot in
    the service, as from 5.74 (5.82); else (5.66) it is taken as the attribute's handle
    while the attribute goes to the next free slot.
    Returns GattApp; raises RegistrationFailed with bluetoothd's reply message.
    """
    proxies = []
    for path, ifaces in objects.items():
        for iface, props in ifaces.items():
            if str(iface) in IGNORED_IFACES:
                continue
            proxies.append((str(path), str(iface), props))
    if not proxies:
        raise RegistrationFailed(NO_OBJECT, "GetManagedObjects returned no objects at %s" % app_path)

    app = GattApp(owner, app_path, adapter)
    profiles = [p for p in proxies if p[1] == PROFILE_IFACE]

    # Pass 1: services (path must be absolute and unique).
    for path, iface, props in proxies:
        if iface != SERVICE_IFACE:
            continue
        if path in app.by_path:
            raise RegistrationFailed(NO_VALID_SERVICE, "Duplicated service: %s" % path)
        svc = Attribute("service", path, props)
        svc.attr_cnt = 1
        app.services.append(svc)
        app.by_path[path] = svc

    # Pass 2: characteristics.
    for path, iface, props in proxies:
        if iface != CHRC_IFACE:
            continue
        service_path = props.get("Service")
        if not _is_path(service_path):
            raise RegistrationFailed(NO_VALID_SERVICE, "Failed to obtain service path for characteristic %s" % path)
        svc = app.by_path.get(str(service_path))
        if svc is None or svc.kind != "service":
            raise RegistrationFailed(NO_VALID_SERVICE, "Unable to find service for characteristic: %s" % path)
        flags = props.get("Flags")
        parsed = rules.parse_chrc_flags(list(flags)) if isinstance(flags, dbus.Array) else None
        if parsed is None:
            raise RegistrationFailed(NO_VALID_SERVICE, "Invalid characteristic flags on %s: %r" % (path, flags))
        chrc = Attribute("characteristic", path, props)
        chrc.parent = svc.path
        chrc.chrc_flags = parsed
        chrc.perm = parsed.perm
        svc.attr_cnt += 2 + (1 if parsed.has_ccc else 0) + (1 if parsed.has_cep else 0)
        svc.children.append(chrc)
        app.by_path[path] = chrc

    # Pass 3: descriptors (their characteristic must exist).
    for path, iface, props in proxies:
        if iface != DESC_IFACE:
            continue
        chrc_path = props.get("Characteristic")
        if not _is_path(chrc_path):
            raise RegistrationFailed(NO_VALID_SERVICE, "Failed to obtain characteristic path for descriptor %s" % path)
        chrc = app.by_path.get(str(chrc_path))
        if chrc is None or chrc.kind != "characteristic":
            raise RegistrationFailed(NO_VALID_SERVICE, "Unable to find service for characteristic: %s" % chrc_path)
        flags = props.get("Flags")
        parsed = rules.parse_desc_flags(list(flags)) if isinstance(flags, dbus.Array) else None
        if parsed is None:
            raise RegistrationFailed(NO_VALID_SERVICE, "Invalid descriptor flags on %s: %r" % (path, flags))
        desc = Attribute("descriptor", path, props)
        desc.parent = chrc.path
        desc.perm = parsed[0]
        app.by_path[chrc.parent].attr_cnt += 1
        chrc.children.append(desc)
        app.by_path[path] = desc

    if not app.services and not profiles:
        raise RegistrationFailed(NO_VALID_SERVICE, "No valid external GATT objects found")

    # database_add_app: per service, in reply order.
    created = set()
    try:
        for svc in app.services:
            _add_service(app, svc, created, allocator, handles_by_index)
    except RegistrationFailed:
        for start, _ in app.handle_ranges:
            allocator.release(start)
        raise

    for a in app.attributes():
        if a.kind == "descriptor" and a.uuid in (rules.CCC_UUID, rules.CEP_UUID):
            app.warnings.append(
                "%s exports descriptor %s: bluetoothd creates CCC/CEP itself, an app copy "
                "becomes a second plain descriptor (bluez #757)" % (a.path, a.uuid[4:8]))
    return app


def _uuid_of(attr):
    value = attr.props.get("UUID")
    if not isinstance(value, dbus.String):
        raise RegistrationFailed(DB_ENTRY_FAILED, "Failed to read \"UUID\" property of %s %s" % (attr.kind, attr.path))
    uuid = rules.normalize_uuid(value)
    if uuid is None:
        raise RegistrationFailed(DB_ENTRY_FAILED, "Invalid UUID %r on %s" % (str(value), attr.path))
    if uuid == rules.GAP_UUID:
        raise RegistrationFailed(DB_ENTRY_FAILED, "GAP service must be handled by BlueZ (%s)" % attr.path)
    if uuid == rules.GATT_UUID:
        raise RegistrationFailed(DB_ENTRY_FAILED, "GATT service must be handled by BlueZ (%s)" % attr.path)
    return uuid


def _handle_of(attr):
    value = attr.props.get("Handle")
    if value is None:
        return 0
    if not isinstance(value, dbus.UInt16):
        raise RegistrationFailed(DB_ENTRY_FAILED, "Failed to read \"Handle\" property of %s" % attr.path)
    return int(value)


def _add_service(app, svc, created, allocator, handles_by_index):
    svc.uuid = _uuid_of(svc)
    primary = svc.props.get("Primary")
    if not isinstance(primary, dbus.Boolean):
        raise RegistrationFailed(DB_ENTRY_FAILED, "Failed to read \"Primary\" property of service %s" % svc.path)
    svc.primary = bool(primary)
    includes = svc.props.get("Includes", dbus.Array([], signature="o"))
    if not isinstance(includes, dbus.Array) or not all(_is_path(p) for p in includes):
        raise RegistrationFailed(DB_ENTRY_FAILED, "Failed to read \"Includes\" property of service %s" % svc.path)
    svc.attr_cnt += len(includes)
    requested = _handle_of(svc)
    start = allocator.allocate(svc.attr_cnt, requested)
    if not start:
        raise RegistrationFailed(DB_ENTRY_FAILED, "No handle range for %s (%d handles)" % (svc.path, svc.attr_cnt))
    app.handle_ranges.append((start, svc.attr_cnt))
    svc.handle = start
    next_handle = start + 1
    for inc in includes:
        target = app.by_path.get(str(inc))
        if target is None or target.kind != "service":
            app.warnings.append("%s: include service not found: %s" % (svc.path, inc))
        elif target.path not in created:
            app.warnings.append("%s: include service attributes failed: %s is not created yet "
                                "(included services must come earlier)" % (svc.path, inc))
        else:
            svc.includes.append(target.path)
            next_handle += 1
    created.add(svc.path)
    # The service's slots: index -> handle. CCC and CEP always take the first free slot.
    slots = {0: start}
    for index in range(1, next_handle - start):
        slots[index] = start + index
    end = start + svc.attr_cnt - 1

    def first_free(end_offset=0):
        index = next((i for i in range(svc.attr_cnt - end_offset) if i not in slots), None)
        if index is None:
            raise RegistrationFailed(DB_ENTRY_FAILED, "No free attribute slot in %s" % svc.path)
        return index

    def insert(attr, requested, end_offset):
        """The handle gatt_db_service_insert_* gives attr (the value's, for a characteristic)."""
        if handles_by_index and requested:
            index = requested - start      # the value's slot for a characteristic
            first = 2 if attr.kind == "characteristic" else 1
            if index < first or index >= svc.attr_cnt:
                raise RegistrationFailed(DB_ENTRY_FAILED, "Handle 0x%04x of %s is outside its service 0x%04x-0x%04x"
                                         % (requested, attr.path, start, end))
            if attr.kind == "characteristic":
                slots[index - 1] = requested - 1
            slots[index] = requested
            return requested
        if requested and requested <= start:
            raise RegistrationFailed(DB_ENTRY_FAILED, "Handle 0x%04x of %s is not after its service's 0x%04x"
                                     % (requested, attr.path, start))
        index = first_free(end_offset)
        previous = slots[index - 1]
        if attr.kind == "characteristic":
            handle = requested or previous + 2
            slots[index] = handle - 1
            slots[index + 1] = handle
        else:
            handle = requested or previous + 1
            slots[index] = handle
        return handle

    def add_plain():
        index = first_free()
        slots[index] = slots[index - 1] + 1

    for chrc in svc.children:
        requested = _handle_of(chrc)
        chrc.uuid = _uuid_of(chrc)
        chrc.handle = insert(chrc, requested, 1)   # the value's handle, after the declaration
        if chrc.chrc_flags.has_ccc:
            add_plain()
        if chrc.chrc_flags.has_cep:
            add_plain()
        for desc in chrc.children:
            requested = _handle_of(desc)
            desc.uuid = _uuid_of(desc)
            desc.handle = insert(desc, requested, 0)
