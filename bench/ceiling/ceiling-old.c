// SPDX-License-Identifier: MIT
/*
 * ceiling-old: the first ceiling (kept to measure beside bench/ceiling/ceiling.c),
 * a libdbus-1 program that serves the benchmark service as a BlueZ GATT
 * application at /org/gattd/app. It costs more per read than it needs to
 * (its 1 ms timerfd ticks even while nobody is subscribed, and it polls twice
 * per message); BENCHMARKS.md, "The true ceiling".
 *
 *   service  12345678-1234-5678-1234-56789abcdef0
 *   rw char  ...def1  flags read,write   value 00 11 22 33, max 512 bytes
 *   seq char ...def2  flags notify       4-byte little-endian sequence number
 *
 * Contract (see bench/README.md):
 * - ReadValue honours `offset` (value[offset:], InvalidOffset past the end);
 *   WriteValue stores value at `offset` and replies unless NO_REPLY_EXPECTED.
 * - StartNotify/StopNotify never reply when flagged NO_REPLY (bluetoothd's way).
 * - While notifying it emits PropertiesChanged(Value = seq, seq += 1):
 *   BENCH_NOTIFY=timer (default) one per tick of a 1 ms timerfd,
 *   BENCH_NOTIFY=flood as fast as libdbus drains its queue (kept < 64 KiB).
 * - RegisterApplication on $BENCH_ADAPTER (default /org/bluez/hci0) is sent
 *   with send_with_reply; the loop keeps dispatching while it is pending.
 *   Registration failure exits with status 1.
 */
#include <dbus/dbus.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define APP_PATH "/org/gattd/app"
#define SVC_PATH APP_PATH "/service0"
#define RW_PATH SVC_PATH "/char0"
#define SEQ_PATH SVC_PATH "/char1"
#define SVC_UUID "12345678-1234-5678-1234-56789abcdef0"
#define RW_UUID "12345678-1234-5678-1234-56789abcdef1"
#define SEQ_UUID "12345678-1234-5678-1234-56789abcdef2"
#define CHR_IFACE "org.bluez.GattCharacteristic1"
#define MAX_LEN 512
#define FLOOD_QUEUE_BYTES (64 * 1024)

static unsigned char rw_value[MAX_LEN] = {0x00, 0x11, 0x22, 0x33};
static int rw_len = 4;
static int notifying;
static int flood;
static uint32_t seq;

static void append_variant(DBusMessageIter *dict, const char *key, int type, const void *val)
{
    DBusMessageIter entry, var;
    char sig[2] = {(char)type, 0};
    dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &entry);
    dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key);
    dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, sig, &var);
    dbus_message_iter_append_basic(&var, type, val);
    dbus_message_iter_close_container(&entry, &var);
    dbus_message_iter_close_container(dict, &entry);
}

static void append_string_array(DBusMessageIter *dict, const char *key, const char **items, int n)
{
    DBusMessageIter entry, var, arr;
    dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &entry);
    dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key);
    dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, "as", &var);
    dbus_message_iter_open_container(&var, DBUS_TYPE_ARRAY, "s", &arr);
    for (int i = 0; i < n; i++)
        dbus_message_iter_append_basic(&arr, DBUS_TYPE_STRING, &items[i]);
    dbus_message_iter_close_container(&var, &arr);
    dbus_message_iter_close_container(&entry, &var);
    dbus_message_iter_close_container(dict, &entry);
}

static void append_bytes_variant(DBusMessageIter *dict, const char *key, const unsigned char *p, int n)
{
    DBusMessageIter entry, var, arr;
    dbus_message_iter_open_container(dict, DBUS_TYPE_DICT_ENTRY, NULL, &entry);
    dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key);
    dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, "ay", &var);
    dbus_message_iter_open_container(&var, DBUS_TYPE_ARRAY, "y", &arr);
    dbus_message_iter_append_fixed_array(&arr, DBUS_TYPE_BYTE, &p, n);
    dbus_message_iter_close_container(&var, &arr);
    dbus_message_iter_close_container(&entry, &var);
    dbus_message_iter_close_container(dict, &entry);
}

/* One object of GetManagedObjects: path -> { iface -> props }. */
static void append_object(DBusMessageIter *objs, const char *path, const char *iface,
                          const char *uuid, const char *service, const char **flags, int nflags)
{
    DBusMessageIter obj, ifaces, ientry, props;
    dbus_bool_t primary = TRUE;
    dbus_message_iter_open_container(objs, DBUS_TYPE_DICT_ENTRY, NULL, &obj);
    dbus_message_iter_append_basic(&obj, DBUS_TYPE_OBJECT_PATH, &path);
    dbus_message_iter_open_container(&obj, DBUS_TYPE_ARRAY, "{sa{sv}}", &ifaces);
    dbus_message_iter_open_container(&ifaces, DBUS_TYPE_DICT_ENTRY, NULL, &ientry);
    dbus_message_iter_append_basic(&ientry, DBUS_TYPE_STRING, &iface);
    dbus_message_iter_open_container(&ientry, DBUS_TYPE_ARRAY, "{sv}", &props);
    append_variant(&props, "UUID", DBUS_TYPE_STRING, &uuid);
    if (service) {
        append_variant(&props, "Service", DBUS_TYPE_OBJECT_PATH, &service);
        append_string_array(&props, "Flags", flags, nflags);
    } else {
        append_variant(&props, "Primary", DBUS_TYPE_BOOLEAN, &primary);
    }
    dbus_message_iter_close_container(&ientry, &props);
    dbus_message_iter_close_container(&ifaces, &ientry);
    dbus_message_iter_close_container(&obj, &ifaces);
    dbus_message_iter_close_container(objs, &obj);
}

static DBusMessage *managed_objects(DBusMessage *call)
{
    static const char *rw_flags[] = {"read", "write"};
    static const char *seq_flags[] = {"notify"};
    DBusMessage *reply = dbus_message_new_method_return(call);
    DBusMessageIter it, objs;
    dbus_message_iter_init_append(reply, &it);
    dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "{oa{sa{sv}}}", &objs);
    append_object(&objs, SVC_PATH, "org.bluez.GattService1", SVC_UUID, NULL, NULL, 0);
    append_object(&objs, RW_PATH, CHR_IFACE, RW_UUID, SVC_PATH, rw_flags, 2);
    append_object(&objs, SEQ_PATH, CHR_IFACE, SEQ_UUID, SVC_PATH, seq_flags, 1);
    dbus_message_iter_close_container(&it, &objs);
    return reply;
}

/* Reads the `offset` option (q) from an a{sv} iterator; 0 when absent. */
static int option_offset(DBusMessageIter *arr)
{
    DBusMessageIter dict, entry, var;
    if (dbus_message_iter_get_arg_type(arr) != DBUS_TYPE_ARRAY)
        return 0;
    dbus_message_iter_recurse(arr, &dict);
    while (dbus_message_iter_get_arg_type(&dict) == DBUS_TYPE_DICT_ENTRY) {
        const char *key;
        dbus_message_iter_recurse(&dict, &entry);
        dbus_message_iter_get_basic(&entry, &key);
        if (strcmp(key, "offset") == 0) {
            dbus_message_iter_next(&entry);
            dbus_message_iter_recurse(&entry, &var);
            if (dbus_message_iter_get_arg_type(&var) == DBUS_TYPE_UINT16) {
                dbus_uint16_t off;
                dbus_message_iter_get_basic(&var, &off);
                return off;
            }
        }
        dbus_message_iter_next(&dict);
    }
    return 0;
}

static DBusMessage *read_value(DBusMessage *call)
{
    DBusMessageIter it, arr;
    dbus_message_iter_init(call, &it);
    int off = option_offset(&it);
    if (off > rw_len)
        return dbus_message_new_error(call, "org.bluez.Error.InvalidOffset", NULL);
    DBusMessage *reply = dbus_message_new_method_return(call);
    const unsigned char *p = rw_value + off;
    dbus_message_iter_init_append(reply, &it);
    dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "y", &arr);
    dbus_message_iter_append_fixed_array(&arr, DBUS_TYPE_BYTE, &p, rw_len - off);
    dbus_message_iter_close_container(&it, &arr);
    return reply;
}

static DBusMessage *write_value(DBusMessage *call)
{
    DBusMessageIter it, arr;
    const unsigned char *p;
    int n;
    if (!dbus_message_iter_init(call, &it) || dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_ARRAY)
        return dbus_message_new_error(call, "org.bluez.Error.InvalidArguments", NULL);
    dbus_message_iter_recurse(&it, &arr);
    dbus_message_iter_get_fixed_array(&arr, &p, &n);
    dbus_message_iter_next(&it);
    int off = option_offset(&it);
    if (off > rw_len)
        return dbus_message_new_error(call, "org.bluez.Error.InvalidOffset", NULL);
    if (off + n > MAX_LEN)
        return dbus_message_new_error(call, "org.bluez.Error.InvalidValueLength", NULL);
    memcpy(rw_value + off, p, (size_t)n);
    rw_len = off + n;
    return dbus_message_new_method_return(call);
}

static void notify_once(DBusConnection *conn)
{
    static const char *iface = CHR_IFACE;
    unsigned char v[4] = {seq & 0xff, (seq >> 8) & 0xff, (seq >> 16) & 0xff, seq >> 24};
    DBusMessage *sig = dbus_message_new_signal(SEQ_PATH, DBUS_INTERFACE_PROPERTIES, "PropertiesChanged");
    DBusMessageIter it, dict, inval;
    dbus_message_iter_init_append(sig, &it);
    dbus_message_iter_append_basic(&it, DBUS_TYPE_STRING, &iface);
    dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "{sv}", &dict);
    append_bytes_variant(&dict, "Value", v, 4);
    dbus_message_iter_close_container(&it, &dict);
    dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "s", &inval);
    dbus_message_iter_close_container(&it, &inval);
    dbus_connection_send(conn, sig, NULL);
    dbus_message_unref(sig);
    seq++;
}

static DBusHandlerResult on_message(DBusConnection *conn, DBusMessage *msg, void *data)
{
    (void)data;
    if (dbus_message_get_type(msg) != DBUS_MESSAGE_TYPE_METHOD_CALL)
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
    const char *path = dbus_message_get_path(msg);
    const char *member = dbus_message_get_member(msg);
    DBusMessage *reply = NULL;
    if (!path || !member)
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
    if (strcmp(path, RW_PATH) == 0 && strcmp(member, "ReadValue") == 0)
        reply = read_value(msg);
    else if (strcmp(path, RW_PATH) == 0 && strcmp(member, "WriteValue") == 0)
        reply = write_value(msg);
    else if (strcmp(path, SEQ_PATH) == 0 && strcmp(member, "StartNotify") == 0) {
        notifying = 1;
        reply = dbus_message_new_method_return(msg);
    } else if (strcmp(path, SEQ_PATH) == 0 && strcmp(member, "StopNotify") == 0) {
        notifying = 0;
        reply = dbus_message_new_method_return(msg);
    } else if (strcmp(path, APP_PATH) == 0 && strcmp(member, "GetManagedObjects") == 0)
        reply = managed_objects(msg);
    else
        reply = dbus_message_new_error(msg, DBUS_ERROR_UNKNOWN_METHOD, member);
    if (!dbus_message_get_no_reply(msg))
        dbus_connection_send(conn, reply, NULL);
    dbus_message_unref(reply);
    return DBUS_HANDLER_RESULT_HANDLED;
}

static void on_registered(DBusPendingCall *pending, void *data)
{
    (void)data;
    DBusMessage *reply = dbus_pending_call_steal_reply(pending);
    if (dbus_message_get_type(reply) == DBUS_MESSAGE_TYPE_ERROR) {
        fprintf(stderr, "ceiling: RegisterApplication failed: %s\n", dbus_message_get_error_name(reply));
        exit(1);
    }
    dbus_message_unref(reply);
    dbus_pending_call_unref(pending);
}

static void register_app(DBusConnection *conn)
{
    const char *adapter = getenv("BENCH_ADAPTER");
    const char *app = APP_PATH;
    DBusMessage *m = dbus_message_new_method_call("org.bluez", adapter ? adapter : "/org/bluez/hci0",
                                                  "org.bluez.GattManager1", "RegisterApplication");
    DBusMessageIter it, opts;
    DBusPendingCall *pending;
    dbus_message_iter_init_append(m, &it);
    dbus_message_iter_append_basic(&it, DBUS_TYPE_OBJECT_PATH, &app);
    dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "{sv}", &opts);
    dbus_message_iter_close_container(&it, &opts);
    if (!dbus_connection_send_with_reply(conn, m, &pending, DBUS_TIMEOUT_USE_DEFAULT) || !pending) {
        fprintf(stderr, "ceiling: cannot send RegisterApplication\n");
        exit(1);
    }
    dbus_pending_call_set_notify(pending, on_registered, NULL, NULL);
    dbus_message_unref(m);
}

int main(void)
{
    DBusError err;
    dbus_error_init(&err);
    const char *mode = getenv("BENCH_NOTIFY");
    flood = mode && strcmp(mode, "flood") == 0;
    DBusConnection *conn = dbus_bus_get_private(DBUS_BUS_SYSTEM, &err);
    if (!conn) {
        fprintf(stderr, "ceiling: %s\n", err.message);
        return 1;
    }
    dbus_connection_set_exit_on_disconnect(conn, FALSE);
    dbus_connection_add_filter(conn, on_message, NULL, NULL);
    register_app(conn);

    int fd = -1;
    dbus_connection_get_unix_fd(conn, &fd);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct itimerspec its = {{0, 1000000}, {0, 1000000}};
    if (!flood)
        timerfd_settime(tfd, 0, &its, NULL);

    for (;;) {
        while (dbus_connection_dispatch(conn) == DBUS_DISPATCH_DATA_REMAINS)
            ;
        int flooding = flood && notifying && dbus_connection_get_outgoing_size(conn) < FLOOD_QUEUE_BYTES;
        struct pollfd pfd[2] = {
            {fd, POLLIN | (dbus_connection_has_messages_to_send(conn) ? POLLOUT : 0), 0},
            {tfd, POLLIN, 0},
        };
        if (poll(pfd, 2, flooding ? 0 : -1) < 0)
            continue;
        if (pfd[1].revents & POLLIN) {
            uint64_t ticks;
            if (read(tfd, &ticks, sizeof ticks) == sizeof ticks && notifying)
                notify_once(conn);
        }
        if (pfd[0].revents & (POLLHUP | POLLERR) && !(pfd[0].revents & POLLIN))
            return 0;
        if (pfd[0].revents)
            dbus_connection_read_write(conn, 0);
        if (!dbus_connection_get_is_connected(conn))
            return 0;
        if (flood && notifying)
            while (notifying && dbus_connection_get_outgoing_size(conn) < FLOOD_QUEUE_BYTES)
                notify_once(conn);
    }
}
