// SPDX-License-Identifier: MIT
/*
 * ceiling: what a C programmer who knows libdbus-1 writes to serve the
 * benchmark service as a BlueZ GATT application at /org/gattd/app with the
 * least work per call; gattd is measured against it (BENCHMARKS.md, "The true
 * ceiling"; the first ceiling is kept as ceiling-old.c).
 *
 *   service  12345678-1234-5678-1234-56789abcdef0
 *   rw char  ...def1  flags read,write   value 00 11 22 33, max 512 bytes
 *   seq char ...def2  flags notify       4-byte little-endian sequence number,
 *                                        NotifyAcquired (AcquireNotify answered)
 *
 * Contract (see bench/README.md):
 * - ReadValue honours `offset` (value[offset:], InvalidOffset past the end);
 *   WriteValue stores value at `offset` and replies unless NO_REPLY_EXPECTED.
 * - StartNotify/StopNotify never reply when flagged NO_REPLY (bluetoothd's way).
 * - While notifying it emits PropertiesChanged(Value = seq, seq += 1):
 *   BENCH_NOTIFY=timer (default) one per 1 ms slot of a fixed grid,
 *   BENCH_NOTIFY=flood as fast as libdbus drains its queue (kept < 64 KiB).
 * - AcquireNotify answers one end of a SOCK_SEQPACKET pair and the MTU; while
 *   such a socket is open each notification is one 4-byte datagram written to
 *   it instead of a signal (same grid), and its hang-up ends it: bluetoothd's
 *   socket path at its least cost, for measuring that path's floor. Every
 *   AcquireNotify adds a socket (bluetoothd 5.69+ acquires one per central, the
 *   `device` option naming it; up to MAX_SOCKETS), and each value is written to
 *   each open socket: the fan-out at its least cost. The sockets are watched
 *   through one epoll descriptor, so the wait per slot is one ppoll on two
 *   descriptors whatever their number; notifications stop when the last hangs up.
 * - RegisterApplication on $BENCH_ADAPTER (default /org/bluez/hci0) is sent
 *   with send_with_reply; the loop keeps dispatching while it is pending.
 *   Registration failure exits with status 1.
 *
 * What it does per call, as gattd must: the call comes through a connection
 * filter (no object-path tree), is matched on path and member, refused unless
 * its sender is the unique name that owned org.bluez at startup (gattd checks
 * the current owner), its options a{sv} are walked entry by entry for `offset`
 * (type-checked), and the reply is sent. A read of the whole value sends a
 * copy of the reply built for the first such read (dbus_message_copy, then
 * dbus_message_set_reply_serial): the bytes are fixed and every caller is
 * bluetoothd, so the copy differs from a new reply only in the reply serial;
 * a write drops it, a read at an offset builds its reply.
 * Built with -DCEILING_SLICE_NS=N (contender ceiling-slice) it first asks the
 * scheduler for a slice of N ns, as gattd does at start (sched_setattr,
 * Linux 6.12+; BENCHMARKS.md, "Fewer context switches"): the ceiling with the
 * same help from the kernel, to show what the slice alone is worth.
 * What it leaves out: no logging, no MTU bookkeeping, no check of the other
 * options' types, no introspection or Properties interface, and only the
 * owner it saw at startup (no NameOwnerChanged tracking).
 *
 * Why it is cheaper than ceiling-old.c: the 1 ms tick runs only while
 * notifying (the old one woke 1,000 times a second during the read phases),
 * each tick is one wait (ppoll, timing out at the slot) and one send (no
 * timerfd to read), and when nothing is notifying the loop is dbus_connection_read_write_dispatch
 * (one poll + one read per message) instead of poll() followed by
 * dbus_connection_read_write(conn, 0), which polls a second time; and the
 * reply to a whole-value read is a copy of a prepared one (about 6,600
 * instructions less per read than dbus_message_new_method_return plus
 * appending the array).
 */
#define _GNU_SOURCE
#include <dbus/dbus.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
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
static uint64_t next_slot_ns; /* CLOCK_MONOTONIC time of the next 1 ms slot */
#define MAX_SOCKETS 64
static int notify_socks[MAX_SOCKETS]; /* our ends of the AcquireNotify sockets */
static int n_socks;
static int sock_epoll = -1; /* watches them for hang-ups */
static uint32_t seq;
static char *bluez_owner; /* unique name of org.bluez at startup */
/* The reply to a ReadValue of the whole value, unsent: addressed to bluez_owner
 * (the only caller served), dropped when the value changes. */
static DBusMessage *reply_template;

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
        if (strcmp(path, SEQ_PATH) == 0) {
            dbus_bool_t acquired = FALSE;
            append_variant(&props, "NotifyAcquired", DBUS_TYPE_BOOLEAN, &acquired);
        }
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

/* The `offset` option (q) of an a{sv} argument; 0 when absent, -1 when it is
 * not a{sv} or offset is not a uint16. */
static int option_offset(DBusMessageIter *arg)
{
    DBusMessageIter dict, entry, var;
    if (dbus_message_iter_get_arg_type(arg) != DBUS_TYPE_ARRAY ||
        dbus_message_iter_get_element_type(arg) != DBUS_TYPE_DICT_ENTRY)
        return -1;
    dbus_message_iter_recurse(arg, &dict);
    while (dbus_message_iter_get_arg_type(&dict) == DBUS_TYPE_DICT_ENTRY) {
        const char *key;
        dbus_message_iter_recurse(&dict, &entry);
        dbus_message_iter_get_basic(&entry, &key);
        if (key[0] == 'o' && strcmp(key, "offset") == 0) {
            dbus_uint16_t off;
            dbus_message_iter_next(&entry);
            dbus_message_iter_recurse(&entry, &var);
            if (dbus_message_iter_get_arg_type(&var) != DBUS_TYPE_UINT16)
                return -1;
            dbus_message_iter_get_basic(&var, &off);
            return off;
        }
        dbus_message_iter_next(&dict);
    }
    return 0;
}

static DBusMessage *invalid_args(DBusMessage *call)
{
    return dbus_message_new_error(call, "org.bluez.Error.InvalidArguments", NULL);
}

static DBusMessage *read_value(DBusMessage *call)
{
    DBusMessageIter it;
    if (!dbus_message_iter_init(call, &it))
        return invalid_args(call);
    int off = option_offset(&it);
    if (off < 0)
        return invalid_args(call);
    if (off > rw_len)
        return dbus_message_new_error(call, "org.bluez.Error.InvalidOffset", NULL);
    if (off == 0 && reply_template) {
        /* The whole value again, to the same caller: a copy with this call's serial. */
        DBusMessage *reply = dbus_message_copy(reply_template);
        if (reply && !dbus_message_set_reply_serial(reply, dbus_message_get_serial(call))) {
            dbus_message_unref(reply);
            return NULL;
        }
        return reply;
    }
    DBusMessage *reply = dbus_message_new_method_return(call);
    const unsigned char *p = rw_value + off;
    if (!reply ||
        !dbus_message_append_args(reply, DBUS_TYPE_ARRAY, DBUS_TYPE_BYTE, &p, rw_len - off, DBUS_TYPE_INVALID)) {
        if (reply)
            dbus_message_unref(reply);
        return NULL;
    }
    if (off == 0) /* dbus_message_copy: unlocked, serial 0, so each copy can be sent */
        reply_template = dbus_message_copy(reply);
    return reply;
}

static DBusMessage *write_value(DBusMessage *call)
{
    DBusMessageIter it, arr;
    const unsigned char *p;
    int n;
    if (!dbus_message_iter_init(call, &it) || dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_ARRAY ||
        dbus_message_iter_get_element_type(&it) != DBUS_TYPE_BYTE)
        return invalid_args(call);
    dbus_message_iter_recurse(&it, &arr);
    dbus_message_iter_get_fixed_array(&arr, &p, &n);
    dbus_message_iter_next(&it);
    int off = option_offset(&it);
    if (off < 0)
        return invalid_args(call);
    if (off > rw_len)
        return dbus_message_new_error(call, "org.bluez.Error.InvalidOffset", NULL);
    if (off + n > MAX_LEN)
        return dbus_message_new_error(call, "org.bluez.Error.InvalidValueLength", NULL);
    memcpy(rw_value + off, p, (size_t)n);
    rw_len = off + n;
    if (reply_template) {
        dbus_message_unref(reply_template);
        reply_template = NULL;
    }
    return dbus_message_new_method_return(call);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void notify_once(DBusConnection *conn)
{
    static const char *iface = CHR_IFACE;
    unsigned char v[4] = {seq & 0xff, (seq >> 8) & 0xff, (seq >> 16) & 0xff, seq >> 24};
    if (n_socks > 0) {
        /* A full socket drops this value (latest wins), as a full bus queue would; a
         * closed one is dropped when epoll reports its hang-up. */
        for (int i = 0; i < n_socks; i++)
            (void)send(notify_socks[i], v, sizeof v, MSG_DONTWAIT | MSG_NOSIGNAL);
        seq++;
        return;
    }
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

/* StartNotify/StopNotify: the 1 ms slots run only while someone listens. */
static void set_notifying(int on)
{
    notifying = on;
    next_slot_ns = now_ns() + 1000000;
}

/* AcquireNotify: one end of a SOCK_SEQPACKET pair and the MTU (23 without a link);
 * one more socket for each call (one per central). */
static DBusMessage *acquire_notify(DBusMessage *call)
{
    int sv[2];
    dbus_uint16_t mtu = 23;
    if (n_socks == MAX_SOCKETS)
        return dbus_message_new_error(call, "org.bluez.Error.Failed", NULL);
    if (sock_epoll < 0 && (sock_epoll = epoll_create1(EPOLL_CLOEXEC)) < 0)
        return dbus_message_new_error(call, "org.bluez.Error.Failed", NULL);
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
        return dbus_message_new_error(call, "org.bluez.Error.Failed", NULL);
    /* no events asked for: EPOLLHUP and EPOLLERR are always reported */
    struct epoll_event ev = {.events = 0, .data.fd = sv[0]};
    if (epoll_ctl(sock_epoll, EPOLL_CTL_ADD, sv[0], &ev) < 0) {
        close(sv[0]);
        close(sv[1]);
        return dbus_message_new_error(call, "org.bluez.Error.Failed", NULL);
    }
    DBusMessage *reply = dbus_message_new_method_return(call);
    if (!reply || !dbus_message_append_args(reply, DBUS_TYPE_UNIX_FD, &sv[1], DBUS_TYPE_UINT16, &mtu,
                                            DBUS_TYPE_INVALID)) {
        if (reply)
            dbus_message_unref(reply);
        close(sv[0]);
        close(sv[1]);
        return NULL;
    }
    close(sv[1]); /* the message holds its own duplicate */
    notify_socks[n_socks++] = sv[0];
    if (n_socks == 1)
        set_notifying(1);
    return reply;
}

/* The sockets epoll reports hung up are closed; notifications stop with the last. */
static void close_hung_up(void)
{
    struct epoll_event evs[MAX_SOCKETS];
    int n = epoll_wait(sock_epoll, evs, MAX_SOCKETS, 0);
    for (int e = 0; e < n; e++) {
        int fd = evs[e].data.fd;
        for (int i = 0; i < n_socks; i++) {
            if (notify_socks[i] != fd)
                continue;
            close(fd); /* leaves the epoll set with it */
            notify_socks[i] = notify_socks[--n_socks];
            break;
        }
    }
    if (n_socks == 0)
        set_notifying(0);
}

static DBusHandlerResult on_message(DBusConnection *conn, DBusMessage *msg, void *data)
{
    (void)data;
    if (dbus_message_get_type(msg) != DBUS_MESSAGE_TYPE_METHOD_CALL)
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
    const char *path = dbus_message_get_path(msg);
    const char *member = dbus_message_get_member(msg);
    const char *sender = dbus_message_get_sender(msg);
    DBusMessage *reply;
    if (!path || !member)
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
    if (!sender || !bluez_owner || strcmp(sender, bluez_owner) != 0)
        reply = dbus_message_new_error(msg, "org.bluez.Error.NotAuthorized", NULL);
    else if (strcmp(path, RW_PATH) == 0) {
        if (strcmp(member, "ReadValue") == 0)
            reply = read_value(msg);
        else if (strcmp(member, "WriteValue") == 0)
            reply = write_value(msg);
        else
            reply = dbus_message_new_error(msg, DBUS_ERROR_UNKNOWN_METHOD, member);
    } else if (strcmp(path, SEQ_PATH) == 0 && strcmp(member, "StartNotify") == 0) {
        set_notifying(1);
        reply = dbus_message_new_method_return(msg);
    } else if (strcmp(path, SEQ_PATH) == 0 && strcmp(member, "AcquireNotify") == 0) {
        reply = acquire_notify(msg);
    } else if (strcmp(path, SEQ_PATH) == 0 && strcmp(member, "StopNotify") == 0) {
        set_notifying(0);
        reply = dbus_message_new_method_return(msg);
    } else if (strcmp(path, APP_PATH) == 0 && strcmp(member, "GetManagedObjects") == 0)
        reply = managed_objects(msg);
    else
        reply = dbus_message_new_error(msg, DBUS_ERROR_UNKNOWN_METHOD, member);
    if (!reply)
        return DBUS_HANDLER_RESULT_NEED_MEMORY;
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

/* The unique name owning org.bluez now (the only sender served). */
static char *name_owner(DBusConnection *conn, const char *name)
{
    DBusError err;
    const char *owner = NULL;
    char *copy = NULL;
    dbus_error_init(&err);
    DBusMessage *m = dbus_message_new_method_call(DBUS_SERVICE_DBUS, DBUS_PATH_DBUS, DBUS_INTERFACE_DBUS,
                                                  "GetNameOwner");
    dbus_message_append_args(m, DBUS_TYPE_STRING, &name, DBUS_TYPE_INVALID);
    DBusMessage *r = dbus_connection_send_with_reply_and_block(conn, m, DBUS_TIMEOUT_USE_DEFAULT, &err);
    dbus_message_unref(m);
    if (r && dbus_message_get_args(r, &err, DBUS_TYPE_STRING, &owner, DBUS_TYPE_INVALID))
        copy = strdup(owner);
    if (r)
        dbus_message_unref(r);
    if (!copy)
        fprintf(stderr, "ceiling: no owner of %s: %s\n", name, err.message ? err.message : "?");
    dbus_error_free(&err);
    return copy;
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

#ifdef CEILING_SLICE_NS
/* struct sched_attr, first version (48 bytes); glibc has no wrapper. */
struct slice_attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
};

static void request_slice(void)
{
    struct slice_attr a = {0};
    if (syscall(SYS_sched_getattr, 0, &a, (unsigned)sizeof a, 0U) == 0) {
        a.size = sizeof a;
        a.flags = 0;
        a.runtime = CEILING_SLICE_NS;
        if (syscall(SYS_sched_setattr, 0, &a, 0U) != 0)
            perror("ceiling: sched_setattr");
    }
}
#endif

int main(void)
{
#ifdef CEILING_SLICE_NS
    request_slice();
#endif
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
    bluez_owner = name_owner(conn, "org.bluez");
    if (!bluez_owner)
        return 1;
    dbus_connection_add_filter(conn, on_message, NULL, NULL);
    register_app(conn);

    int fd = -1;
    dbus_connection_get_unix_fd(conn, &fd);
    for (;;) {
        if (!notifying) {
            /* Only the bus to wait for: libdbus's own loop, one poll and one read per message. */
            if (!dbus_connection_read_write_dispatch(conn, -1))
                return 0;
            continue;
        }
        while (dbus_connection_dispatch(conn) == DBUS_DISPATCH_DATA_REMAINS)
            ;
        int flooding = flood && notifying && dbus_connection_get_outgoing_size(conn) < FLOOD_QUEUE_BYTES;
        struct pollfd pfd[2] = {
            {fd, POLLIN | (dbus_connection_has_messages_to_send(conn) ? POLLOUT : 0), 0},
            {sock_epoll, POLLIN, 0}, /* readable: a notify socket hung up */
        };
        struct timespec wait = {0, 0};
        uint64_t now = now_ns();
        if (!flood && now < next_slot_ns)
            wait.tv_nsec = (long)(next_slot_ns - now);
        if (ppoll(pfd, n_socks > 0 ? 2 : 1, flooding || !flood ? &wait : NULL, NULL) < 0)
            continue;
        if (n_socks > 0 && pfd[1].revents)
            close_hung_up();
        if (!flood && notifying && (now = now_ns()) >= next_slot_ns) {
            notify_once(conn);
            /* One slot on (a late wake-up does not shift the grid), but never closer
             * than half a slot to this one: gattd's pacer keeps the same rule. */
            next_slot_ns += 1000000;
            if (next_slot_ns < now + 500000)
                next_slot_ns = now + 500000;
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
