# SPDX-License-Identifier: MIT
"""Pure rules of bluetoothd 5.66 that the stand-in applies (no D-Bus I/O here).

Each function states which bluetoothd behaviour it models; see
docs/bluez-contract.md §1-§6 and §8. Nothing here is BlueZ code:
it is a re-statement of the observable behaviour.
"""

import re

BASE_UUID_SUFFIX = "-0000-1000-8000-00805f9b34fb"

# ATT error codes bluetoothd sends (Core spec Vol 3 Part F 3.4.1.1 + CSS).
ATT_READ_NOT_PERMITTED = 0x02
ATT_WRITE_NOT_PERMITTED = 0x03
ATT_INSUFFICIENT_AUTHENTICATION = 0x05
ATT_REQUEST_NOT_SUPPORTED = 0x06
ATT_INVALID_OFFSET = 0x07
ATT_INSUFFICIENT_AUTHORIZATION = 0x08
ATT_INVALID_VALUE_LENGTH = 0x0D
ATT_UNLIKELY = 0x0E
ATT_INSUFFICIENT_ENCRYPTION = 0x0F
ATT_CCC_IMPROPERLY_CONFIGURED = 0xFD
ATT_ALREADY_IN_PROGRESS = 0xFE

ATT_MAX_VALUE_LEN = 512

# Link security levels as bluetoothd's ATT layer names them.
SECURITY_LOW = 1
SECURITY_MEDIUM = 2
SECURITY_HIGH = 3
SECURITY_FIPS = 4

PERM_READ = 0x01
PERM_WRITE = 0x02
PERM_READ_ENCRYPT = 0x04
PERM_WRITE_ENCRYPT = 0x08
PERM_READ_AUTHEN = 0x10
PERM_WRITE_AUTHEN = 0x20
PERM_READ_SECURE = 0x40
PERM_WRITE_SECURE = 0x80
PERM_READ_MASK = PERM_READ | PERM_READ_ENCRYPT | PERM_READ_AUTHEN | PERM_READ_SECURE
PERM_WRITE_MASK = PERM_WRITE | PERM_WRITE_ENCRYPT | PERM_WRITE_AUTHEN | PERM_WRITE_SECURE

# flag -> (property bits, extended property bits, value permission, CCC permission)
CHRC_FLAGS = {
    "broadcast": (0x01, 0, 0, 0),
    "read": (0x02, 0, PERM_READ, 0),
    "write-without-response": (0x04, 0, PERM_WRITE, 0),
    "write": (0x08, 0, PERM_WRITE, 0),
    "notify": (0x10, 0, 0, PERM_WRITE),
    "indicate": (0x20, 0, 0, PERM_WRITE),
    "authenticated-signed-writes": (0x40, 0, PERM_WRITE, 0),
    "extended-properties": (0x80, 0, 0, 0),
    "reliable-write": (0, 0x0001, PERM_WRITE, 0),
    "writable-auxiliaries": (0, 0x0002, 0, 0),
    "encrypt-read": (0x02, 0, PERM_READ | PERM_READ_ENCRYPT, 0),
    "encrypt-write": (0x08, 0, PERM_WRITE | PERM_WRITE_ENCRYPT, 0),
    "encrypt-authenticated-read": (0x02, 0, PERM_READ | PERM_READ_AUTHEN, 0),
    "encrypt-authenticated-write": (0x08, 0, PERM_WRITE | PERM_WRITE_AUTHEN, 0),
    "secure-read": (0x02, 0, PERM_READ | PERM_READ_SECURE, 0),
    "secure-write": (0x08, 0, PERM_WRITE | PERM_WRITE_SECURE, 0),
    "authorize": (0, 0, 0, 0),
    "encrypt-notify": (0x10, 0, 0, PERM_WRITE_ENCRYPT),
    "encrypt-authenticated-notify": (0x10, 0, 0, PERM_WRITE_AUTHEN),
    "secure-notify": (0x10, 0, 0, PERM_WRITE_SECURE),
    "encrypt-indicate": (0x20, 0, 0, PERM_WRITE_ENCRYPT),
    "encrypt-authenticated-indicate": (0x20, 0, 0, PERM_WRITE_AUTHEN),
    "secure-indicate": (0x20, 0, 0, PERM_WRITE_SECURE),
}

DESC_FLAGS = {
    "read": PERM_READ,
    "write": PERM_WRITE,
    "encrypt-read": PERM_READ | PERM_READ_ENCRYPT,
    "encrypt-write": PERM_WRITE | PERM_WRITE_ENCRYPT,
    "encrypt-authenticated-read": PERM_READ | PERM_READ_AUTHEN,
    "encrypt-authenticated-write": PERM_WRITE | PERM_WRITE_AUTHEN,
    "secure-read": PERM_READ | PERM_READ_SECURE,
    "secure-write": PERM_WRITE | PERM_WRITE_SECURE,
    "authorize": 0,
}


class ChrcFlags:
    """Parsed characteristic flags: ATT properties, extended properties, permissions."""

    def __init__(self, props, ext_props, perm, ccc_perm, authorize):
        self.props = props
        self.ext_props = ext_props
        self.perm = perm
        self.ccc_perm = ccc_perm
        self.authorize = authorize

    @property
    def has_ccc(self):
        """bluetoothd adds a CCC (0x2902) when notify or indicate is declared."""
        return bool(self.props & 0x30)

    @property
    def has_cep(self):
        """bluetoothd adds a CEP (0x2900) when extended properties are used."""
        return bool(self.ext_props)

    @property
    def write_without_response(self):
        return bool(self.props & 0x04)


def parse_chrc_flags(flags):
    """Return ChrcFlags, or None when bluetoothd would refuse the list.

    Models parse_chrc_flags: the list must be non-empty and every string known;
    any extended property sets the 0x80 property bit.
    """
    if not flags:
        return None
    props = ext = perm = ccc = 0
    authorize = False
    for flag in flags:
        entry = CHRC_FLAGS.get(str(flag))
        if entry is None:
            return None
        props |= entry[0]
        ext |= entry[1]
        perm |= entry[2]
        ccc |= entry[3]
        authorize = authorize or flag == "authorize"
    if ext:
        props |= 0x80
    return ChrcFlags(props, ext, perm, ccc, authorize)


def parse_desc_flags(flags):
    """Return (perm, authorize) or None when bluetoothd would refuse the list."""
    if not flags:
        return None
    perm = 0
    for flag in flags:
        if str(flag) not in DESC_FLAGS:
            return None
        perm |= DESC_FLAGS[str(flag)]
    return perm, "authorize" in flags


_HEX = re.compile(r"^[0-9a-fA-F]+$")
_UUID128 = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def normalize_uuid(text):
    """Lowercase 128-bit form of a 16/32/128-bit UUID string, or None if invalid.

    Accepts what bt_string_to_uuid accepts: 4 or 8 hex digits (optionally with 0x)
    or the 36-character 128-bit form.
    """
    text = str(text)
    if _UUID128.match(text):
        return text.lower()
    short = text[2:] if text[:2].lower() == "0x" else text
    if len(short) in (4, 8) and _HEX.match(short):
        return "%08x%s" % (int(short, 16), BASE_UUID_SUFFIX)
    return None


GAP_UUID = normalize_uuid("1800")
GATT_UUID = normalize_uuid("1801")
CCC_UUID = normalize_uuid("2902")
CEP_UUID = normalize_uuid("2900")


def c_strtol(text):
    """(value, fully_parsed) like strtol(text, &end, 0) followed by *end == '\\0'."""
    s = text.lstrip(" \t\n\v\f\r")
    sign = 1
    if s[:1] in "+-" and s:
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if s[:2].lower() == "0x" and len(s) > 2 and s[2] in "0123456789abcdefABCDEF":
        base, digits = 16, s[2:]
    elif s[:1] == "0":
        base, digits = 8, s
    else:
        base, digits = 10, s
    valid = "0123456789abcdef"[:base]
    n = 0
    while n < len(digits) and digits[n].lower() in valid:
        n += 1
    if n == 0:
        # No digits at all: strtol leaves end at the start of the text.
        return 0, text == ""
    return sign * int(digits[:n], base), n == len(digits)


def att_error_for(op, name, message):
    """ATT code bluetoothd 5.66 sends for a D-Bus error from the app (docs/bluez-contract.md §4).

    op is "read" or "write" (NotPermitted maps to 0x02 or 0x03).
    """
    if name == "org.bluez.Error.Failed":
        value, full = c_strtol(message or "")
        if not full:
            return 0x80
        if value < 0x80 or value > 0x9F:
            return ATT_UNLIKELY
        return value
    table = {
        "org.bluez.Error.NotSupported": ATT_REQUEST_NOT_SUPPORTED,
        "org.bluez.Error.NotAuthorized": ATT_INSUFFICIENT_AUTHORIZATION,
        "org.bluez.Error.InvalidValueLength": ATT_INVALID_VALUE_LENGTH,
        "org.bluez.Error.InvalidOffset": ATT_INVALID_OFFSET,
        "org.bluez.Error.InProgress": ATT_ALREADY_IN_PROGRESS,
        "org.bluez.Error.NotPermitted": (
            ATT_READ_NOT_PERMITTED if op == "read" else ATT_WRITE_NOT_PERMITTED),
    }
    return table.get(name, ATT_UNLIKELY)


def check_permissions(perm, mask, security):
    """ATT code bluetoothd's gatt-server returns before calling the app, or 0.

    perm == 0 means "no permission bits" and lets everything through, as in
    bluetoothd (e.g. a notify-only characteristic is readable at ATT level).
    """
    if perm and mask & PERM_READ and not perm & PERM_READ:
        return ATT_READ_NOT_PERMITTED
    if perm and mask & PERM_WRITE and not perm & PERM_WRITE:
        return ATT_WRITE_NOT_PERMITTED
    perm &= mask
    if perm & (PERM_READ_SECURE | PERM_WRITE_SECURE) and security < SECURITY_FIPS:
        return ATT_INSUFFICIENT_AUTHENTICATION
    if perm & (PERM_READ_AUTHEN | PERM_WRITE_AUTHEN) and security < SECURITY_HIGH:
        return ATT_INSUFFICIENT_AUTHENTICATION
    if perm & (PERM_READ_ENCRYPT | PERM_WRITE_ENCRYPT) and security < SECURITY_MEDIUM:
        return ATT_INSUFFICIENT_ENCRYPTION
    return 0


def read_pdu_payload(value, mtu):
    """Bytes of a ReadValue reply that one ATT Read/Read Blob response carries:
    bluetoothd truncates to 512, then gatt-server sends MIN(mtu - 1, len)."""
    value = bytes(value)[:ATT_MAX_VALUE_LEN]
    return value[: max(mtu - 1, 0)]
