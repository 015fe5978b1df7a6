// SPDX-License-Identifier: MIT
/*
 * loadgen: plays bluetoothd plus one connected central (or N, --centrals) on a
 * (private) bus, launches one contender GATT application and measures it.
 *
 *   loadgen [options] -- contender-argv...
 *
 * It owns org.bluez, exports /org/bluez/hci0 (Adapter1, GattManager1,
 * LEAdvertisingManager1) and /org/bluez (AgentManager1) under an
 * ObjectManager at / (Adapter1 with `Connectable` and `Manufacturer`: it reads as
 * bluetoothd 5.79+, one AcquireNotify socket per central whose datagrams go to that
 * central alone, docs/bluez-contract.md, "Sockets"), answers RegisterApplication like
 * bluetoothd (deferred reply after GetManagedObjects on the caller's application
 * path), then runs
 * the requested phases against the registered characteristics and prints one
 * line per phase on stdout:
 *
 *   BENCH contender=<label> phase=<name> key=value ...
 *
 * Phases (comma list, run in the order given):
 *   ping     org.freedesktop.DBus.Peer.Ping to the bus daemon, 1 outstanding
 *   startup  exec -> RegisterApplication call -> reply; exec -> READY=1
 *   read1    ReadValue, 1 outstanding          (calls/s, p50/p99 latency)
 *   read8    ReadValue, 8 outstanding
 *   write    WriteValue with reply, 1 outstanding
 *   writenr  WriteValue flagged NO_REPLY (as bluetoothd does for
 *            write-without-response), closed by a read-back that must return
 *            the last value written (writes from one sender are ordered)
 *   notify   StartNotify (NO_REPLY), count PropertiesChanged(Value) for
 *            --notify-secs from the first one, gaps from the 4-byte LE
 *            sequence number, then StopNotify
 *            With --feed ID (contenders whose values come from other programs,
 *            like gattd): loadgen itself changes the value while the phase
 *            runs, calling org.gattd.Manager1.SetValue(ID, 4-byte LE sequence
 *            number) on org.gattd /org/gattd with 16 calls outstanding
 *   notifysock  AcquireNotify (options mtu, link, device, as bluetoothd passes
 *            them) on the notifying characteristic instead of StartNotify, then
 *            each datagram read from the returned SOCK_SEQPACKET socket counts as
 *            one notification, exactly as `notify` counts signals (same window,
 *            gaps, intervals, CPU, --feed); closing the socket unsubscribes
 *   writesock  AcquireWrite on the write-without-response characteristic
 *            (…def3, read + write-without-response), then --calls 4-byte
 *            datagrams on the returned socket, closed by ReadValue read-backs
 *            until the last value is returned (see phase_writesock)
 *   With --centrals N (1-64): N connected centrals, each a Device1 object, and the
 *            notify phases fan each value out to all of them: notifysock calls
 *            AcquireNotify once per central with that central's `device` and reads
 *            every socket (n = datagrams delivered to all centrals, values = what the
 *            first got, gaps summed over the centrals, per_central_min/max); notify
 *            calls StartNotify once per central, as bluetoothd does for each enabling
 *            CCC write, and counts each signal N times (delivered=signals_x_centrals:
 *            bluetoothd notifies every subscribed central of one signal). CPU is per
 *            delivered notification.
 *   rss      VmHWM of the contender (and, with --smaps FILE, a copy of its
 *            /proc/<pid>/smaps for finding where the memory is)
 * Each measured phase reports cpu_s_per_10k: contender CPU over the phase
 * from /proc/<pid>/stat utime+stime (clock ticks) and, more precisely,
 * schedstat_s_per_10k from the sum of /proc/<pid>/task/<tid>/schedstat.
 *
 * With --handler PROG (gattd only), PROG is started once the contender has
 * registered, with DBUS_SYSTEM_BUS_ADDRESS set; it must claim the read/write
 * characteristic through org.gattd.Manager1.RegisterHandler and print a line
 * "registered" (bench/handler/handler.c does); reads and writes then travel
 * gattd -> org.gattd.Handler1 -> PROG, and each measured phase also reports
 * handler_schedstat_s_per_10k, PROG's own CPU.
 *
 * The contender inherits DBUS_SYSTEM_BUS_ADDRESS=<bus>, NOTIFY_SOCKET (a
 * datagram socket read by loadgen) and BENCH_NOTIFY=<--notify-mode>; its
 * stdout goes to loadgen's stderr.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#define CHR_IFACE "org.bluez.GattCharacteristic1"
#define SVC_IFACE "org.bluez.GattService1"
#define RW_UUID "12345678-1234-5678-1234-56789abcdef1"
#define SEQ_UUID "12345678-1234-5678-1234-56789abcdef2"
#define WNR_UUID "12345678-1234-5678-1234-56789abcdef3" /* write-without-response (writesock) */
#define DEVICE_PATH "/org/bluez/hci0/dev_00_11_22_33_44_55"
#define CALL_TIMEOUT_US (10ULL * 1000000ULL)
#define MAX_CENTRALS 64 /* --centrals */

static sd_bus *bus;
static const char *label = "contender";
static pid_t child = -1;
static int notify_fd = -1;
static char notify_path[108];
static uint64_t t_exec, t_regcall, t_registered, t_ready;
static int registered; /* 1 ok, -1 failed */
static int services_found;
static sd_bus_message *pending_register;
static char app_sender[256], app_path[512], rw_path[512], seq_path[512], wnr_path[512];
static char adapter_alias[64] = "gattd-bench";
static int adapter_powered = 1, adapter_discoverable, adapter_pairable = 1;
static uint32_t adapter_disc_timeout = 180, adapter_pair_timeout;
static int fatal_exit, stopping;
static pid_t handler_pid = -1;
/* The bus daemon, for the whole path's CPU (bus_schedstat_s_per_10k); -1 when unknown. */
static pid_t bus_pid = -1;
static void pump(uint64_t deadline);
/* One more descriptor pump() waits on (the AcquireNotify/AcquireWrite socket), and what to
 * call when poll reports it. */
static int extra_fd = -1;
static short extra_events;
static void (*extra_ready)(short revents);
/* The centrals' notify sockets of a fan-out (notifysock with --centrals), polled too; the
 * callback gets the central's index. */
static int fan_n;
static int fan_fds[MAX_CENTRALS];
static void (*fan_ready)(int central);

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int r)
{
    fprintf(stderr, "loadgen: %s: %s\n", what, strerror(r < 0 ? -r : r));
    if (child > 0)
        kill(child, SIGKILL);
    if (notify_path[0])
        unlink(notify_path);
    exit(2);
}

/* ---- /proc ---------------------------------------------------------------- */

/* utime+stime of the whole process, in clock ticks; its stime alone in *sys when given. */
static long long proc_ticks_split(pid_t pid, long long *sys)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    unsigned long long ut = 0, st = 0;
    /* fields after ")": state(3) ... utime(14) stime(15) */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    if (sys)
        *sys = (long long)st;
    return (long long)(ut + st);
}


/* Sum of on-CPU nanoseconds of the live threads (schedstat field 1), and, in *slices
 * when given, of the times they were put on the CPU (field 3). */
static long long proc_sched(pid_t pid, long long *slices)
{
    char path[300];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    long long sum = 0, runs = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/%d/task/%s/schedstat", pid, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        unsigned long long ns, wait, count;
        int n = fscanf(f, "%llu %llu %llu", &ns, &wait, &count);
        if (n >= 1)
            sum += (long long)ns;
        if (n == 3)
            runs += (long long)count;
        fclose(f);
    }
    closedir(d);
    if (slices)
        *slices = runs;
    return sum;
}

static long long proc_sched_ns(pid_t pid) { return proc_sched(pid, NULL); }

static long proc_status_kb(pid_t pid, const char *key)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long kb = -1;
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, klen) == 0 && line[klen] == ':')
            kb = strtol(line + klen + 1, NULL, 10);
    fclose(f);
    return kb;
}

struct cpu_mark {
    long long ticks, sys_ticks, sched_ns, handler_ns, bus_ns, self_ns;
    /* Times each was put on the CPU (schedstat field 3): context switches in. */
    long long slices, bus_slices, self_slices;
};

static struct cpu_mark cpu_now(void)
{
    struct cpu_mark m = {.handler_ns = handler_pid > 0 ? proc_sched_ns(handler_pid) : -1,
                         .bus_ns = -1, .bus_slices = -1};
    m.ticks = proc_ticks_split(child, &m.sys_ticks);
    m.sched_ns = proc_sched(child, &m.slices);
    if (bus_pid > 0)
        m.bus_ns = proc_sched(bus_pid, &m.bus_slices);
    m.self_ns = proc_sched(getpid(), &m.self_slices);
    return m;
}

/* " cpu_s_per_10k=... schedstat_s_per_10k=..." for `ops` operations. */
static void print_cpu(struct cpu_mark a, struct cpu_mark b, long ops)
{
    double hz = (double)sysconf(_SC_CLK_TCK);
    if (ops <= 0 || a.ticks < 0 || b.ticks < 0) {
        printf(" cpu_s_per_10k=- sys_s_per_10k=- schedstat_s_per_10k=-");
        return;
    }
    printf(" cpu_s_per_10k=%.4f sys_s_per_10k=%.4f schedstat_s_per_10k=%.4f",
           (double)(b.ticks - a.ticks) / hz * 10000.0 / (double)ops,
           (double)(b.sys_ticks - a.sys_ticks) / hz * 10000.0 / (double)ops,
           (double)(b.sched_ns - a.sched_ns) / 1e9 * 10000.0 / (double)ops);
    if (a.handler_ns >= 0 && b.handler_ns >= 0)
        printf(" handler_schedstat_s_per_10k=%.4f", (double)(b.handler_ns - a.handler_ns) / 1e9 * 10000.0 / (double)ops);
    /* The rest of the path on a board: the bus daemon routing the messages, and loadgen
     * itself in bluetoothd's place (receiving signals or datagrams, sending calls). */
    if (a.bus_ns >= 0 && b.bus_ns >= 0)
        printf(" bus_schedstat_s_per_10k=%.4f", (double)(b.bus_ns - a.bus_ns) / 1e9 * 10000.0 / (double)ops);
    if (a.self_ns >= 0 && b.self_ns >= 0)
        printf(" loadgen_schedstat_s_per_10k=%.4f", (double)(b.self_ns - a.self_ns) / 1e9 * 10000.0 / (double)ops);
    /* How often each went on the CPU per operation: a round trip costs more when a
     * process is switched in twice for it (preempted, then resumed). */
    printf(" slices_per_op=%.3f", (double)(b.slices - a.slices) / (double)ops);
    if (a.bus_slices >= 0 && b.bus_slices >= 0)
        printf(" bus_slices_per_op=%.3f", (double)(b.bus_slices - a.bus_slices) / (double)ops);
    printf(" loadgen_slices_per_op=%.3f", (double)(b.self_slices - a.self_slices) / (double)ops);
}

/* Starts the handler program and waits (pumping the bus) for its "registered" line. */
static int start_handler(const char *prog, const char *address)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        die("pipe", errno);
    handler_pid = fork();
    if (handler_pid < 0)
        die("fork", errno);
    if (handler_pid == 0) {
        setenv("DBUS_SYSTEM_BUS_ADDRESS", address, 1);
        dup2(fds[1], 1);
        execl(prog, prog, (char *)NULL);
        fprintf(stderr, "loadgen: exec %s: %s\n", prog, strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    char line[256];
    size_t used = 0;
    uint64_t deadline = now_ns() + 10000000000ULL;
    while (now_ns() < deadline) {
        pump(now_ns() + 2000000ULL); /* gattd may call us (org.bluez) meanwhile */
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        if (poll(&pfd, 1, 0) <= 0)
            continue;
        ssize_t n = read(fds[0], line + used, sizeof line - 1 - used);
        if (n <= 0)
            break;
        used += (size_t)n;
        line[used] = 0;
        if (strstr(line, "registered")) {
            close(fds[0]);
            return 0;
        }
    }
    close(fds[0]);
    fprintf(stderr, "loadgen: handler %s did not print \"registered\": %s\n", prog, used ? line : "(nothing)");
    return -1;
}

static void stop_handler(void)
{
    if (handler_pid <= 0)
        return;
    kill(handler_pid, SIGTERM);
    waitpid(handler_pid, NULL, 0);
    handler_pid = -1;
}

/* ---- loop ----------------------------------------------------------------- */

static void check_child(void)
{
    int status;
    if (child > 0 && waitpid(child, &status, WNOHANG) == child) {
        child = -1;
        if (!stopping) {
            fprintf(stderr, "loadgen: contender exited (status %d)\n", status);
            fatal_exit = 1;
        }
    }
}

static void read_notify_socket(void)
{
    char buf[4096];
    ssize_t n;
    while ((n = recv(notify_fd, buf, sizeof buf - 1, MSG_DONTWAIT)) > 0) {
        buf[n] = 0;
        if (!t_ready && (strncmp(buf, "READY=1", 7) == 0 || strstr(buf, "\nREADY=1")))
            t_ready = now_ns();
    }
}

/* Processes everything pending, then sleeps at most until `deadline`. */
static void pump(uint64_t deadline)
{
    int r;
    while ((r = sd_bus_process(bus, NULL)) > 0)
        ;
    if (r < 0)
        die("sd_bus_process", r);
    uint64_t now = now_ns(), bus_to = UINT64_MAX;
    sd_bus_get_timeout(bus, &bus_to); /* absolute CLOCK_MONOTONIC us */
    int64_t ms = deadline > now ? (int64_t)((deadline - now) / 1000000ULL) + 1 : 0;
    if (ms > 100)
        ms = 100;
    if (bus_to != UINT64_MAX) {
        int64_t bms = (int64_t)(bus_to / 1000ULL) - (int64_t)(now / 1000000ULL);
        if (bms < ms)
            ms = bms < 0 ? 0 : bms;
    }
    /* poll ignores a negative fd: extra_fd is -1 unless a socket phase runs */
    struct pollfd p[3 + MAX_CENTRALS] = {{sd_bus_get_fd(bus), (short)sd_bus_get_events(bus), 0}, {notify_fd, POLLIN, 0},
                               {extra_fd, extra_events, 0}};
    for (int i = 0; i < fan_n; i++)
        p[3 + i] = (struct pollfd){fan_fds[i], POLLIN, 0};
    r = poll(p, (nfds_t)(3 + fan_n), (int)ms);
    if (r == 0 && child > 0)
        check_child();
    if (notify_fd >= 0 && (p[1].revents & POLLIN))
        read_notify_socket();
    if (extra_fd >= 0 && p[2].revents)
        extra_ready(p[2].revents);
    for (int i = 0; i < fan_n; i++)
        if (fan_fds[i] >= 0 && p[3 + i].revents)
            fan_ready(i);
}

static int run_until(int *done, double secs)
{
    uint64_t deadline = now_ns() + (uint64_t)(secs * 1e9);
    while (!*done && !fatal_exit && now_ns() < deadline)
        pump(deadline);
    return *done;
}

/* ---- org.bluez stand-in objects ------------------------------------------ */

static int adapter_get(sd_bus *b, const char *path, const char *iface, const char *prop,
                       sd_bus_message *reply, void *ud, sd_bus_error *e)
{
    (void)b, (void)path, (void)iface, (void)ud, (void)e;
    if (!strcmp(prop, "Address"))
        return sd_bus_message_append(reply, "s", "00:AA:BB:CC:DD:EE");
    if (!strcmp(prop, "AddressType"))
        return sd_bus_message_append(reply, "s", "public");
    if (!strcmp(prop, "Name"))
        return sd_bus_message_append(reply, "s", "bench");
    if (!strcmp(prop, "Alias"))
        return sd_bus_message_append(reply, "s", adapter_alias);
    if (!strcmp(prop, "Class"))
        return sd_bus_message_append(reply, "u", 0);
    if (!strcmp(prop, "Powered"))
        return sd_bus_message_append(reply, "b", adapter_powered);
    if (!strcmp(prop, "Discoverable"))
        return sd_bus_message_append(reply, "b", adapter_discoverable);
    if (!strcmp(prop, "Pairable"))
        return sd_bus_message_append(reply, "b", adapter_pairable);
    if (!strcmp(prop, "DiscoverableTimeout"))
        return sd_bus_message_append(reply, "u", adapter_disc_timeout);
    if (!strcmp(prop, "PairableTimeout"))
        return sd_bus_message_append(reply, "u", adapter_pair_timeout);
    if (!strcmp(prop, "Discovering"))
        return sd_bus_message_append(reply, "b", 0);
    if (!strcmp(prop, "UUIDs"))
        return sd_bus_message_append(reply, "as", 0);
    if (!strcmp(prop, "Modalias"))
        return sd_bus_message_append(reply, "s", "usb:v1D6Bp0246d0542");
    if (!strcmp(prop, "Roles"))
        return sd_bus_message_append(reply, "as", 2, "central", "peripheral");
    if (!strcmp(prop, "ActiveInstances"))
        return sd_bus_message_append(reply, "y", 0);
    if (!strcmp(prop, "SupportedInstances"))
        return sd_bus_message_append(reply, "y", 5);
    if (!strcmp(prop, "SupportedIncludes"))
        return sd_bus_message_append(reply, "as", 3, "tx-power", "appearance", "local-name");
    /* 5.71+ (Manufacturer, Version) and 5.79+ (Connectable): a bluetoothd that gives each
     * central its own AcquireNotify socket, its datagrams to that central alone (gattd
     * reads the release from these names: docs/bluez-contract.md, "Sockets") */
    if (!strcmp(prop, "Manufacturer"))
        return sd_bus_message_append(reply, "q", (uint16_t)0x05f1);
    if (!strcmp(prop, "Version"))
        return sd_bus_message_append(reply, "y", (uint8_t)0x0d);
    if (!strcmp(prop, "Connectable"))
        return sd_bus_message_append(reply, "b", 1);
    return -ENOENT;
}

static int adapter_set(sd_bus *b, const char *path, const char *iface, const char *prop,
                       sd_bus_message *value, void *ud, sd_bus_error *e)
{
    (void)b, (void)path, (void)iface, (void)ud, (void)e;
    if (!strcmp(prop, "Alias")) {
        const char *s;
        int r = sd_bus_message_read(value, "s", &s);
        if (r >= 0)
            snprintf(adapter_alias, sizeof adapter_alias, "%s", s);
        return r;
    }
    if (!strcmp(prop, "Powered"))
        return sd_bus_message_read(value, "b", &adapter_powered);
    if (!strcmp(prop, "Discoverable"))
        return sd_bus_message_read(value, "b", &adapter_discoverable);
    if (!strcmp(prop, "Pairable"))
        return sd_bus_message_read(value, "b", &adapter_pairable);
    if (!strcmp(prop, "DiscoverableTimeout"))
        return sd_bus_message_read(value, "u", &adapter_disc_timeout);
    if (!strcmp(prop, "PairableTimeout"))
        return sd_bus_message_read(value, "u", &adapter_pair_timeout);
    return -ENOENT;
}

static int method_ok(sd_bus_message *m, void *ud, sd_bus_error *e)
{
    (void)ud, (void)e;
    return sd_bus_reply_method_return(m, "");
}

static int skip_value(sd_bus_message *m)
{
    return sd_bus_message_skip(m, "v");
}

/* Parses a{oa{sa{sv}}}: counts services, finds the two benchmark characteristics. */
static int parse_objects(sd_bus_message *m)
{
    int r = sd_bus_message_enter_container(m, 'a', "{oa{sa{sv}}}");
    if (r < 0)
        return r;
    while ((r = sd_bus_message_enter_container(m, 'e', "oa{sa{sv}}")) > 0) {
        const char *opath;
        if ((r = sd_bus_message_read(m, "o", &opath)) < 0)
            return r;
        if ((r = sd_bus_message_enter_container(m, 'a', "{sa{sv}}")) < 0)
            return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sa{sv}")) > 0) {
            const char *iface;
            if ((r = sd_bus_message_read(m, "s", &iface)) < 0)
                return r;
            int is_chr = !strcmp(iface, CHR_IFACE), is_svc = !strcmp(iface, SVC_IFACE);
            services_found += is_svc;
            if ((r = sd_bus_message_enter_container(m, 'a', "{sv}")) < 0)
                return r;
            while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *key, *uuid;
                if ((r = sd_bus_message_read(m, "s", &key)) < 0)
                    return r;
                if (is_chr && !strcmp(key, "UUID")) {
                    if ((r = sd_bus_message_read(m, "v", "s", &uuid)) < 0)
                        return r;
                    if (!strcasecmp(uuid, RW_UUID))
                        snprintf(rw_path, sizeof rw_path, "%s", opath);
                    else if (!strcasecmp(uuid, SEQ_UUID))
                        snprintf(seq_path, sizeof seq_path, "%s", opath);
                    else if (!strcasecmp(uuid, WNR_UUID))
                        snprintf(wnr_path, sizeof wnr_path, "%s", opath);
                } else if ((r = skip_value(m)) < 0)
                    return r;
                sd_bus_message_exit_container(m);
            }
            sd_bus_message_exit_container(m);
            sd_bus_message_exit_container(m);
        }
        sd_bus_message_exit_container(m);
        sd_bus_message_exit_container(m);
    }
    return sd_bus_message_exit_container(m);
}

static int on_managed_objects(sd_bus_message *m, void *ud, sd_bus_error *e)
{
    (void)ud, (void)e;
    const char *err = NULL;
    if (sd_bus_message_is_method_error(m, NULL)) {
        fprintf(stderr, "loadgen: GetManagedObjects failed: %s\n", sd_bus_message_get_error(m)->name);
        err = "No object received";
    } else if (parse_objects(m) < 0 || services_found == 0)
        err = "No valid service object found";
    if (err) {
        sd_bus_reply_method_error(pending_register, &SD_BUS_ERROR_MAKE_CONST("org.bluez.Error.Failed", err));
        registered = -1;
    } else {
        sd_bus_reply_method_return(pending_register, "");
        registered = 1;
    }
    t_registered = now_ns();
    sd_bus_message_unref(pending_register);
    pending_register = NULL;
    return 0;
}

static int on_signal(sd_bus_message *m, void *ud, sd_bus_error *e);

static int method_register_app(sd_bus_message *m, void *ud, sd_bus_error *e)
{
    (void)ud;
    const char *path;
    int r = sd_bus_message_read(m, "o", &path);
    if (r < 0)
        return sd_bus_error_set(e, "org.bluez.Error.InvalidArguments", "Invalid arguments");
    if (pending_register || registered > 0)
        return sd_bus_error_set(e, "org.bluez.Error.AlreadyExists", "Already Exists");
    t_regcall = now_ns();
    snprintf(app_sender, sizeof app_sender, "%s", sd_bus_message_get_sender(m));
    snprintf(app_path, sizeof app_path, "%s", path);
    pending_register = sd_bus_message_ref(m);
    char rule[1024];
    snprintf(rule, sizeof rule, "type='signal',sender='%s',path_namespace='%s'", app_sender, app_path);
    r = sd_bus_add_match_async(bus, NULL, rule, on_signal, NULL, NULL);
    if (r < 0)
        die("add match", r);
    r = sd_bus_call_method_async(bus, NULL, app_sender, app_path, "org.freedesktop.DBus.ObjectManager",
                                 "GetManagedObjects", on_managed_objects, NULL, "");
    if (r < 0)
        die("GetManagedObjects", r);
    return 1;
}

static const sd_bus_vtable adapter_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("Address", "s", adapter_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("AddressType", "s", adapter_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Name", "s", adapter_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_WRITABLE_PROPERTY("Alias", "s", adapter_get, adapter_set, 0, 0),
    SD_BUS_PROPERTY("Class", "u", adapter_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_WRITABLE_PROPERTY("Powered", "b", adapter_get, adapter_set, 0, 0),
    SD_BUS_WRITABLE_PROPERTY("Discoverable", "b", adapter_get, adapter_set, 0, 0),
    SD_BUS_WRITABLE_PROPERTY("Pairable", "b", adapter_get, adapter_set, 0, 0),
    SD_BUS_WRITABLE_PROPERTY("DiscoverableTimeout", "u", adapter_get, adapter_set, 0, 0),
    SD_BUS_WRITABLE_PROPERTY("PairableTimeout", "u", adapter_get, adapter_set, 0, 0),
    SD_BUS_PROPERTY("Discovering", "b", adapter_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("UUIDs", "as", adapter_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Modalias", "s", adapter_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Roles", "as", adapter_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Manufacturer", "q", adapter_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Version", "y", adapter_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Connectable", "b", adapter_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_METHOD("StartDiscovery", "", "", method_ok, 0),
    SD_BUS_METHOD("StopDiscovery", "", "", method_ok, 0),
    SD_BUS_METHOD("SetDiscoveryFilter", "a{sv}", "", method_ok, 0),
    SD_BUS_VTABLE_END,
};

static const sd_bus_vtable gatt_manager_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD("RegisterApplication", "oa{sv}", "", method_register_app, 0),
    SD_BUS_METHOD("UnregisterApplication", "o", "", method_ok, 0),
    SD_BUS_VTABLE_END,
};

static const sd_bus_vtable adv_manager_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("ActiveInstances", "y", adapter_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("SupportedInstances", "y", adapter_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("SupportedIncludes", "as", adapter_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_METHOD("RegisterAdvertisement", "oa{sv}", "", method_ok, 0),
    SD_BUS_METHOD("UnregisterAdvertisement", "o", "", method_ok, 0),
    SD_BUS_VTABLE_END,
};

static const sd_bus_vtable agent_manager_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD("RegisterAgent", "os", "", method_ok, 0),
    SD_BUS_METHOD("UnregisterAgent", "o", "", method_ok, 0),
    SD_BUS_METHOD("RequestDefaultAgent", "o", "", method_ok, 0),
    SD_BUS_VTABLE_END,
};

/* ---- the connected centrals (--centrals N) -------------------------------- */

/* With --centrals N, N centrals are connected (one Device1 object each, exported before
 * the contender starts, as bluetoothd has them for connected centrals) and the notify
 * phases fan one value out to all of them: notifysock acquires one socket per central
 * (AcquireNotify with that central's `device`, as bluetoothd 5.69+ does), notify calls
 * StartNotify once per central (bluetoothd calls it for every enabling CCC write) and
 * counts each signal N times, as bluetoothd then notifies each subscribed central.
 * Without --centrals: one central, DEVICE_PATH, no Device1 object (as before). */
static int ncentrals; /* 0: the single central of the default mode */
static struct central {
    char path[64], address[18];
    int fd; /* its notify socket (notifysock), -1 when none */
    long count, gaps, reorders, drained;
    uint32_t prev;
    int have_prev, closed;
} cen[MAX_CENTRALS];

static int device_get(sd_bus *b, const char *path, const char *iface, const char *prop, sd_bus_message *reply,
                      void *ud, sd_bus_error *e)
{
    (void)b, (void)path, (void)iface, (void)e;
    const struct central *c = ud;
    if (!strcmp(prop, "Address"))
        return sd_bus_message_append(reply, "s", c->address);
    if (!strcmp(prop, "AddressType"))
        return sd_bus_message_append(reply, "s", "public");
    if (!strcmp(prop, "Alias"))
        return sd_bus_message_append(reply, "s", c->address);
    if (!strcmp(prop, "Adapter"))
        return sd_bus_message_append(reply, "o", "/org/bluez/hci0");
    if (!strcmp(prop, "Connected") || !strcmp(prop, "ServicesResolved"))
        return sd_bus_message_append(reply, "b", 1);
    if (!strcmp(prop, "Paired") || !strcmp(prop, "Bonded") || !strcmp(prop, "Trusted") ||
        !strcmp(prop, "Blocked") || !strcmp(prop, "LegacyPairing"))
        return sd_bus_message_append(reply, "b", 0);
    if (!strcmp(prop, "UUIDs"))
        return sd_bus_message_append(reply, "as", 0);
    return -ENOENT;
}

static const sd_bus_vtable device_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("Address", "s", device_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("AddressType", "s", device_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Alias", "s", device_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Adapter", "o", device_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Paired", "b", device_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Bonded", "b", device_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Trusted", "b", device_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Blocked", "b", device_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("LegacyPairing", "b", device_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Connected", "b", device_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("ServicesResolved", "b", device_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("UUIDs", "as", device_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_VTABLE_END,
};

/* Central i: 00:11:22:33:44:55 + i (the first one is DEVICE_PATH's), and its Device1. */
static void add_centrals(int n)
{
    for (int i = 0; i < n; i++) {
        struct central *c = &cen[i];
        int last = 0x55 + i;
        snprintf(c->address, sizeof c->address, "00:11:22:33:44:%02X", last);
        snprintf(c->path, sizeof c->path, "/org/bluez/hci0/dev_00_11_22_33_44_%02X", last);
        c->fd = -1;
        int r = sd_bus_add_object_vtable(bus, NULL, c->path, "org.bluez.Device1", device_vtable, c);
        if (r < 0)
            die("Device1", r);
    }
}

/* ---- RPC phases ----------------------------------------------------------- */

enum call_kind { CALL_PING, CALL_READ, CALL_WRITE };

struct rpc;
struct call_ctx {
    struct rpc *rpc;
    long idx;
};

struct rpc {
    enum call_kind kind;
    struct call_ctx *ctx;
    long n, issued, done, errors, bad;
    uint64_t *start, *lat;
    uint64_t last_reply;
    int finished;
    int check_value; /* compare each read reply with expect[] */
    unsigned char expect[4];
};

static int append_device_options(sd_bus_message *m, const char *device)
{
    return sd_bus_message_append(m, "a{sv}", 3, "device", "o", device, "link", "s", "LE", "mtu", "q",
                                 (uint16_t)517);
}

static int append_options(sd_bus_message *m) { return append_device_options(m, DEVICE_PATH); }

static sd_bus_message *new_call(enum call_kind kind, long idx)
{
    sd_bus_message *m = NULL;
    int r;
    if (kind == CALL_PING)
        r = sd_bus_message_new_method_call(bus, &m, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                           "org.freedesktop.DBus.Peer", "Ping");
    else
        r = sd_bus_message_new_method_call(bus, &m, app_sender, rw_path, CHR_IFACE,
                                           kind == CALL_READ ? "ReadValue" : "WriteValue");
    if (r < 0)
        die("new call", r);
    if (kind == CALL_WRITE) {
        uint8_t v[4] = {(uint8_t)idx, (uint8_t)(idx >> 8), (uint8_t)(idx >> 16), (uint8_t)(idx >> 24)};
        if ((r = sd_bus_message_append_array(m, 'y', v, 4)) < 0)
            die("append", r);
    }
    if (kind != CALL_PING && (r = append_options(m)) < 0)
        die("append", r);
    return m;
}

static int on_rpc_reply(sd_bus_message *m, void *ud, sd_bus_error *e);

static void rpc_issue(struct rpc *p)
{
    long idx = p->issued++;
    sd_bus_message *m = new_call(p->kind, idx);
    p->start[idx] = now_ns();
    p->ctx[idx] = (struct call_ctx){p, idx};
    int r = sd_bus_call_async(bus, NULL, m, on_rpc_reply, &p->ctx[idx], CALL_TIMEOUT_US);
    sd_bus_message_unref(m);
    if (r < 0)
        die("call", r);
}

static int reply_matches(sd_bus_message *m, const unsigned char *expect)
{
    const void *ptr;
    size_t size;
    if (sd_bus_message_read_array(m, 'y', &ptr, &size) < 0)
        return 0;
    return size == 4 && memcmp(ptr, expect, 4) == 0;
}

static int on_rpc_reply(sd_bus_message *m, void *ud, sd_bus_error *e)
{
    (void)e;
    struct call_ctx *ctx = ud;
    struct rpc *p = ctx->rpc;
    uint64_t t = now_ns();
    p->done++;
    p->lat[ctx->idx] = t - p->start[ctx->idx];
    p->last_reply = t;
    if (sd_bus_message_is_method_error(m, NULL)) {
        if (p->errors++ == 0)
            fprintf(stderr, "loadgen: %s: call failed: %s\n", label, sd_bus_message_get_error(m)->name);
    } else if (p->check_value && !reply_matches(m, p->expect))
        p->bad++;
    if (p->issued < p->n)
        rpc_issue(p);
    else if (p->done == p->n)
        p->finished = 1;
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct_us(uint64_t *sorted, long n, double q)
{
    long i = (long)(q * (double)(n - 1) + 0.5);
    return (double)sorted[i] / 1000.0;
}

/* Runs n calls with `window` outstanding; returns 0 when all completed. */
static int rpc_run(struct rpc *p, long n, int window, double max_secs)
{
    p->n = n;
    p->start = calloc((size_t)n, sizeof(uint64_t));
    p->lat = calloc((size_t)n, sizeof(uint64_t));
    p->ctx = calloc((size_t)n, sizeof(struct call_ctx));
    for (int i = 0; i < window && p->issued < n; i++)
        rpc_issue(p);
    run_until(&p->finished, max_secs);
    return p->finished ? 0 : -1;
}

static void rpc_free(struct rpc *p)
{
    free(p->start);
    free(p->lat);
    free(p->ctx);
}

static void phase_rpc(const char *name, enum call_kind kind, long n, int window, int check)
{
    struct rpc p = {.kind = kind, .check_value = check, .expect = {0x00, 0x11, 0x22, 0x33}};
    struct cpu_mark c0 = {.handler_ns = -1, .bus_ns = -1, .self_ns = -1, .bus_slices = -1}, c1;
    if (kind != CALL_PING)
        c0 = cpu_now();
    uint64_t t0 = now_ns();
    int r = rpc_run(&p, n, window, 120);
    uint64_t t1 = p.last_reply ? p.last_reply : now_ns();
    c1 = kind != CALL_PING ? cpu_now() : c0;
    printf("BENCH contender=%s phase=%s", label, name);
    if (r < 0) {
        printf(" status=timeout done=%ld of=%ld errors=%ld\n", p.done, n, p.errors);
        rpc_free(&p);
        fflush(stdout);
        return;
    }
    qsort(p.lat, (size_t)n, sizeof(uint64_t), cmp_u64);
    double secs = (double)(t1 - t0) / 1e9;
    printf(" status=ok n=%ld outstanding=%d secs=%.4f rate=%.0f p50_us=%.1f p99_us=%.1f errors=%ld", n, window,
           secs, (double)n / secs, pct_us(p.lat, n, 0.50), pct_us(p.lat, n, 0.99), p.errors);
    if (check)
        printf(" wrong_values=%ld", p.bad);
    if (kind != CALL_PING)
        print_cpu(c0, c1, n);
    printf("\n");
    fflush(stdout);
    rpc_free(&p);
}

/* WriteValue NO_REPLY x n, then one ReadValue that must return the last value. */
static void phase_writenr(long n)
{
    struct cpu_mark c0 = cpu_now();
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++) {
        sd_bus_message *m = new_call(CALL_WRITE, i);
        sd_bus_message_set_expect_reply(m, 0);
        int r = sd_bus_send(bus, m, NULL);
        sd_bus_message_unref(m);
        if (r < 0)
            die("send", r);
        if ((i & 63) == 63)
            while (sd_bus_process(bus, NULL) > 0)
                ;
    }
    struct rpc p = {.kind = CALL_READ, .check_value = 1};
    long last = n - 1;
    unsigned char want[4] = {(uint8_t)last, (uint8_t)(last >> 8), (uint8_t)(last >> 16), (uint8_t)(last >> 24)};
    memcpy(p.expect, want, 4);
    int r = rpc_run(&p, 1, 1, 120);
    uint64_t t1 = now_ns();
    struct cpu_mark c1 = cpu_now();
    printf("BENCH contender=%s phase=writenr", label);
    if (r < 0 || p.errors) {
        printf(" status=%s n=%ld\n", r < 0 ? "timeout" : "error", n);
    } else {
        double secs = (double)(t1 - t0) / 1e9;
        printf(" status=ok n=%ld secs=%.4f rate=%.0f readback_ok=%d", n, secs, (double)n / secs, p.bad == 0);
        print_cpu(c0, c1, n);
        printf("\n");
    }
    fflush(stdout);
    rpc_free(&p);
}

/* ---- notifications -------------------------------------------------------- */

static struct {
    int active, counting;
    long count, gaps, reorders, drained;
    uint32_t prev;
    int have_prev;
    uint64_t first, last;
    uint64_t *arrivals;
    long cap;
} ntf;

/* The 4-byte LE sequence number a notification carries. */
static uint32_t seq_of(const uint8_t *v, size_t size)
{
    uint32_t seq = 0;
    for (size_t i = 0; i < size && i < 4; i++)
        seq |= (uint32_t)v[i] << (8 * i);
    return seq;
}

/* One more sequence number received: the values skipped since the previous one are gaps,
 * one not above it a reorder. */
static void seq_track(uint32_t seq, uint32_t *prev, int *have_prev, long *gaps, long *reorders)
{
    if (*have_prev) {
        if (seq > *prev + 1)
            *gaps += seq - *prev - 1;
        else if (seq <= *prev)
            (*reorders)++;
    }
    *prev = seq;
    *have_prev = 1;
}

/* One notification carrying `value` (a 4-byte LE sequence number) arrived now. */
static void ntf_record(const uint8_t *v, size_t size)
{
    uint32_t seq = seq_of(v, size);
    uint64_t t = now_ns();
    if (!ntf.counting) {
        ntf.drained++;
        return;
    }
    if (!ntf.first)
        ntf.first = t;
    ntf.last = t;
    if (ntf.count < ntf.cap)
        ntf.arrivals[ntf.count] = t;
    ntf.count++;
    seq_track(seq, &ntf.prev, &ntf.have_prev, &ntf.gaps, &ntf.reorders);
}

static int on_signal(sd_bus_message *m, void *ud, sd_bus_error *e)
{
    (void)ud, (void)e;
    if (!ntf.active || !sd_bus_message_is_signal(m, "org.freedesktop.DBus.Properties", "PropertiesChanged"))
        return 0;
    const char *path = sd_bus_message_get_path(m);
    const char *iface;
    if (!path || strcmp(path, seq_path) || sd_bus_message_read(m, "s", &iface) < 0)
        return 0;
    if (sd_bus_message_enter_container(m, 'a', "{sv}") <= 0)
        return 0;
    while (sd_bus_message_enter_container(m, 'e', "sv") > 0) {
        const char *key;
        if (sd_bus_message_read(m, "s", &key) < 0)
            return 0;
        if (strcmp(key, "Value")) {
            skip_value(m);
            sd_bus_message_exit_container(m);
            continue;
        }
        const uint8_t *v;
        size_t size;
        if (sd_bus_message_enter_container(m, 'v', "ay") <= 0 ||
            sd_bus_message_read_array(m, 'y', (const void **)&v, &size) < 0)
            return 0;
        ntf_record(v, size);
        return 0;
    }
    return 0;
}

static void send_noreply(const char *member)
{
    sd_bus_message *m;
    int r = sd_bus_message_new_method_call(bus, &m, app_sender, seq_path, CHR_IFACE, member);
    if (r < 0)
        die("new call", r);
    sd_bus_message_set_expect_reply(m, 0);
    r = sd_bus_send(bus, m, NULL);
    sd_bus_message_unref(m);
    if (r < 0)
        die("send", r);
}

/* --feed: values pushed from outside, the way other programs drive gattd */
static struct {
    const char *id;
    int active;
    uint32_t next;
    long outstanding, sent, failed;
} feed;

static void feed_send(void);

static int on_feed_reply(sd_bus_message *m, void *ud, sd_bus_error *e)
{
    (void)ud;
    (void)e;
    feed.outstanding--;
    if (sd_bus_message_is_method_error(m, NULL)) {
        if (feed.failed++ == 0)
            fprintf(stderr, "loadgen: SetValue: %s\n", sd_bus_message_get_error(m)->message);
    }
    while (feed.active && feed.outstanding < 16)
        feed_send();
    return 0;
}

static void feed_send(void)
{
    sd_bus_message *m;
    uint32_t v = feed.next++;
    uint8_t bytes[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    int r = sd_bus_message_new_method_call(bus, &m, "org.gattd", "/org/gattd", "org.gattd.Manager1", "SetValue");
    if (r >= 0)
        r = sd_bus_message_append(m, "s", feed.id);
    if (r >= 0)
        r = sd_bus_message_append_array(m, 'y', bytes, sizeof bytes);
    if (r >= 0)
        r = sd_bus_call_async(bus, NULL, m, on_feed_reply, NULL, CALL_TIMEOUT_US);
    sd_bus_message_unref(m);
    if (r < 0)
        die("SetValue", r);
    feed.outstanding++;
    feed.sent++;
}

/* " interval_p50_us=... interval_p99_us=..." of the arrivals recorded since count0. */
static void print_intervals(long count0)
{
    /* inter-arrival intervals over the measured window */
    long k = (ntf.count < ntf.cap ? ntf.count : ntf.cap) - count0;
    uint64_t *gap_ns = calloc((size_t)(k > 1 ? k : 1), sizeof(uint64_t));
    for (long i = 1; i < k; i++)
        gap_ns[i - 1] = ntf.arrivals[count0 + i] - ntf.arrivals[count0 + i - 1];
    qsort(gap_ns, (size_t)(k > 1 ? k - 1 : 0), sizeof(uint64_t), cmp_u64);
    if (k > 2)
        printf(" interval_p50_us=%.1f interval_p99_us=%.1f", pct_us(gap_ns, k - 1, 0.5), pct_us(gap_ns, k - 1, 0.99));
    free(gap_ns);
}

/* " status=ok n=... rate=... gaps=..." and the contender's CPU for the notifications
 * counted since count0 (first at t0, last at t1). */
static void print_ntf_stats(long count0, long gaps0, uint64_t t0, uint64_t t1, struct cpu_mark c0,
                            struct cpu_mark c1)
{
    long n = ntf.count - count0;
    double dt = (double)(t1 - t0) / 1e9;
    printf(" status=ok n=%ld secs=%.4f rate=%.0f gaps=%ld reorders=%ld", n, dt, dt > 0 ? (double)n / dt : 0.0,
           ntf.gaps - gaps0, ntf.reorders);
    print_intervals(count0);
    print_cpu(c0, c1, n);
}

/* A fan-out's figures (--centrals N): n is the notifications delivered to all centrals
 * together, values what one central got (the first: its intervals are printed), gaps
 * the values the centrals missed, summed; the CPU is per delivered notification. */
static void print_fan_stats(long values, long delivered, long gaps, long reorders, long count0, uint64_t t0,
                            uint64_t t1, struct cpu_mark c0, struct cpu_mark c1)
{
    double dt = (double)(t1 - t0) / 1e9;
    printf(" status=ok n=%ld secs=%.4f rate=%.0f values=%ld gaps=%ld reorders=%ld", delivered, dt,
           dt > 0 ? (double)delivered / dt : 0.0, values, gaps, reorders);
    print_intervals(count0);
    print_cpu(c0, c1, delivered);
}

/* The end of a notify phase: the line, when one is open (`line_open`), gets the feed's
 * figures and ends. */
static void end_notify_phase(int line_open)
{
    if (line_open) {
        if (feed.id)
            printf(" feed_sent=%ld feed_failed=%ld", feed.sent, feed.failed);
        printf("\n");
    }
    ntf.active = 0;
    free(ntf.arrivals);
    fflush(stdout);
}

static void phase_notify(const char *mode, double secs, long max_count)
{
    memset(&ntf, 0, sizeof ntf);
    ntf.cap = 4000000;
    ntf.arrivals = calloc((size_t)ntf.cap, sizeof(uint64_t));
    ntf.active = ntf.counting = 1;
    /* bluetoothd calls StartNotify for every central that enables notifications, and
     * StopNotify when the last one disables them */
    for (int i = 0; i < (ncentrals ? ncentrals : 1); i++)
        send_noreply("StartNotify");
    printf("BENCH contender=%s phase=notify mode=%s", label, mode);
    if (ncentrals)
        printf(" centrals=%d delivered=signals_x_centrals", ncentrals);
    if (feed.id) {
        feed.active = 1;
        feed.next = 1;
        while (feed.outstanding < 16)
            feed_send();
    }
    /* wait for the first notification */
    uint64_t deadline = now_ns() + 5000000000ULL;
    while (!ntf.count && !fatal_exit && now_ns() < deadline)
        pump(deadline);
    if (!ntf.count) {
        feed.active = 0;
        printf(" status=none\n");
        send_noreply("StopNotify");
        ntf.active = 0;
        free(ntf.arrivals);
        fflush(stdout);
        return;
    }
    struct cpu_mark c0 = cpu_now();
    long count0 = ntf.count, gaps0 = ntf.gaps;
    uint64_t t0 = ntf.last;
    deadline = t0 + (uint64_t)(secs * 1e9);
    while (!fatal_exit && now_ns() < deadline && ntf.count - count0 < max_count)
        pump(deadline);
    ntf.counting = 0;
    feed.active = 0;
    uint64_t t1 = ntf.last;
    struct cpu_mark c1 = cpu_now();
    send_noreply("StopNotify");
    if (ncentrals) /* one signal: bluetoothd notifies each subscribed central */
        print_fan_stats(ntf.count - count0, (ntf.count - count0) * ncentrals, (ntf.gaps - gaps0) * ncentrals,
                        ntf.reorders * ncentrals, count0, t0, t1, c0, c1);
    else
        print_ntf_stats(count0, gaps0, t0, t1, c0, c1);
    /* drain what is still queued so the next phase starts clean */
    uint64_t quiet = now_ns() + 300000000ULL;
    while (!fatal_exit && now_ns() < quiet)
        pump(quiet);
    printf(" after_stop=%ld", ntf.drained);
    end_notify_phase(1);
}

/* ---- AcquireNotify / AcquireWrite sockets --------------------------------- */

/* bluetoothd's alternative to signals and WriteValue: the application hands it one end of
 * a SOCK_SEQPACKET socket; each notification (or each written value) is one datagram. */
static struct {
    int done, fd;
    uint16_t mtu;
    char error[256];
} acq;

static int on_acquire_reply(sd_bus_message *m, void *ud, sd_bus_error *e)
{
    (void)ud, (void)e;
    acq.done = 1;
    if (sd_bus_message_is_method_error(m, NULL)) {
        snprintf(acq.error, sizeof acq.error, "%s", sd_bus_message_get_error(m)->name);
        return 0;
    }
    int fd;
    uint16_t mtu;
    if (sd_bus_message_read(m, "hq", &fd, &mtu) < 0) {
        snprintf(acq.error, sizeof acq.error, "reply-not-hq");
        return 0;
    }
    acq.fd = fcntl(fd, F_DUPFD_CLOEXEC, 3); /* the message owns fd */
    acq.mtu = mtu;
    if (acq.fd < 0)
        snprintf(acq.error, sizeof acq.error, "dup-%s", strerror(errno));
    return 0;
}

/* Calls `method` (AcquireNotify or AcquireWrite) on `path` with bluetoothd's options for
 * central `device`; returns the socket, non-blocking, or -1 with acq.error set. */
static int acquire_for(const char *path, const char *method, const char *device)
{
    memset(&acq, 0, sizeof acq);
    acq.fd = -1;
    sd_bus_message *m = NULL;
    int r = sd_bus_message_new_method_call(bus, &m, app_sender, path, CHR_IFACE, method);
    if (r < 0)
        die("new call", r);
    if ((r = append_device_options(m, device)) < 0)
        die("append", r);
    r = sd_bus_call_async(bus, NULL, m, on_acquire_reply, NULL, CALL_TIMEOUT_US);
    sd_bus_message_unref(m);
    if (r < 0)
        die("call", r);
    if (!run_until(&acq.done, 15.0)) {
        snprintf(acq.error, sizeof acq.error, "timeout");
        return -1;
    }
    if (acq.fd >= 0 && fcntl(acq.fd, F_SETFL, fcntl(acq.fd, F_GETFL) | O_NONBLOCK) < 0)
        die("fcntl", errno);
    return acq.fd;
}

static int acquire(const char *path, const char *method) { return acquire_for(path, method, DEVICE_PATH); }

static int sock_closed; /* the contender closed its end */

/* notifysock: every datagram queued on the socket is one notification */
static void read_notify_datagrams(short revents)
{
    (void)revents;
    uint8_t buf[1024];
    for (;;) {
        ssize_t n = recv(extra_fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) {
            ntf_record(buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            sock_closed = 1; /* end of stream (or an error): stop polling it */
            extra_fd = -1;
        }
        return;
    }
}

static void feed_start(void)
{
    if (!feed.id)
        return;
    feed.active = 1;
    feed.next = 1;
    feed.sent = feed.failed = 0;
    while (feed.outstanding < 16)
        feed_send();
}

/* The end of a notify socket phase, its sockets closed: when it counted (`counted`), the
 * feed's last SetValue calls are answered before the next phase and the line ends. */
static void finish_sock_phase(int counted)
{
    if (counted) {
        uint64_t quiet = now_ns() + 5000000000ULL;
        while (feed.outstanding > 0 && !fatal_exit && now_ns() < quiet)
            pump(quiet);
    }
    end_notify_phase(counted);
}

/* AcquireNotify on the notifying characteristic, then datagrams counted for `secs` from
 * the first one exactly as `notify` counts signals; closing the socket unsubscribes. */
static void phase_notifysock(const char *mode, double secs, long max_count)
{
    printf("BENCH contender=%s phase=notifysock mode=%s", label, mode);
    int fd = acquire(seq_path, "AcquireNotify");
    if (fd < 0) {
        printf(" status=acquire-failed error=%s\n", acq.error);
        fflush(stdout);
        return;
    }
    memset(&ntf, 0, sizeof ntf);
    ntf.cap = 4000000;
    ntf.arrivals = calloc((size_t)ntf.cap, sizeof(uint64_t));
    ntf.active = ntf.counting = 1;
    sock_closed = 0;
    extra_fd = fd;
    extra_events = POLLIN;
    extra_ready = read_notify_datagrams;
    feed_start();
    uint64_t deadline = now_ns() + 5000000000ULL;
    while (!ntf.count && !sock_closed && !fatal_exit && now_ns() < deadline)
        pump(deadline);
    if (!ntf.count) {
        printf(" status=none mtu=%u closed_by_contender=%d\n", acq.mtu, sock_closed);
    } else {
        struct cpu_mark c0 = cpu_now();
        long count0 = ntf.count, gaps0 = ntf.gaps;
        uint64_t t0 = ntf.last;
        deadline = t0 + (uint64_t)(secs * 1e9);
        while (!sock_closed && !fatal_exit && now_ns() < deadline && ntf.count - count0 < max_count)
            pump(deadline);
        ntf.counting = 0;
        feed.active = 0;
        uint64_t t1 = ntf.last;
        struct cpu_mark c1 = cpu_now();
        print_ntf_stats(count0, gaps0, t0, t1, c0, c1);
        /* what was sent but not yet read when the window closed */
        if (extra_fd >= 0)
            read_notify_datagrams(0);
        printf(" unread=%ld mtu=%u closed_by_contender=%d", ntf.drained, acq.mtu, sock_closed);
    }
    feed.active = 0;
    extra_fd = -1;
    close(fd); /* = unsubscribe */
    finish_sock_phase(ntf.count > 0);
}

/* notifysock with --centrals N: every central's datagrams, counted per central (gaps from
 * each one's own sequence); the first central's also go through ntf_record, for the
 * window and the intervals. */
static struct {
    long delivered, closed;
    uint64_t last;
} fan;

static void read_fan_datagrams(int i)
{
    struct central *c = &cen[i];
    uint8_t buf[1024];
    for (;;) {
        ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) {
            if (!ntf.counting) {
                c->drained++;
                continue;
            }
            c->count++;
            seq_track(seq_of(buf, (size_t)n), &c->prev, &c->have_prev, &c->gaps, &c->reorders);
            if (i == 0)
                ntf_record(buf, (size_t)n);
            fan.delivered++;
            fan.last = now_ns();
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            c->closed = 1; /* end of stream (or an error): stop polling it */
            fan.closed++;
            fan_fds[i] = -1;
        }
        return;
    }
}

/* One AcquireNotify per central, each with its own `device` (the sockets of bluetoothd
 * 5.69+), then every datagram on every socket counted for `secs` from the first one after
 * the last socket was acquired; closing the sockets unsubscribes. */
static void phase_fanout_sock(const char *mode, double secs, long max_count)
{
    printf("BENCH contender=%s phase=notifysock mode=%s centrals=%d", label, mode, ncentrals);
    memset(&ntf, 0, sizeof ntf);
    memset(&fan, 0, sizeof fan);
    ntf.cap = 4000000;
    ntf.arrivals = calloc((size_t)ntf.cap, sizeof(uint64_t));
    ntf.active = 1; /* not counting: what arrives while the others subscribe is drained */
    for (int i = 0; i < ncentrals; i++) {
        struct central *c = &cen[i];
        c->count = c->gaps = c->reorders = c->drained = 0;
        c->have_prev = c->closed = 0;
        c->fd = fan_fds[i] = -1;
    }
    fan_ready = read_fan_datagrams;
    const char *failed = NULL;
    for (int i = 0; i < ncentrals && !failed; i++) {
        int fd = acquire_for(seq_path, "AcquireNotify", cen[i].path);
        if (fd < 0) {
            printf(" status=acquire-failed central=%d error=%s\n", i, acq.error);
            failed = acq.error;
            break;
        }
        cen[i].fd = fan_fds[i] = fd;
        fan_n = i + 1;
    }
    long values0 = 0, gaps0 = 0, count0 = 0, delivered0 = 0, reorders0 = 0;
    if (!failed) {
        feed_start();
        ntf.counting = 1;
        uint64_t deadline = now_ns() + 5000000000ULL;
        while (!fan.delivered && !fan.closed && !fatal_exit && now_ns() < deadline)
            pump(deadline);
        if (!fan.delivered) {
            printf(" status=none closed_by_contender=%ld\n", fan.closed);
            failed = "none";
        }
    }
    if (!failed) {
        struct cpu_mark c0 = cpu_now();
        long mark[MAX_CENTRALS], gmark[MAX_CENTRALS];
        for (int i = 0; i < ncentrals; i++) {
            mark[i] = cen[i].count;
            gmark[i] = cen[i].gaps;
            reorders0 += cen[i].reorders;
            cen[i].drained = 0; /* from here: what is left unread when the window closes */
        }
        count0 = ntf.count;
        delivered0 = fan.delivered;
        values0 = cen[0].count;
        uint64_t t0 = fan.last, deadline = t0 + (uint64_t)(secs * 1e9);
        while (!fan.closed && !fatal_exit && now_ns() < deadline && fan.delivered - delivered0 < max_count)
            pump(deadline);
        ntf.counting = 0;
        feed.active = 0;
        uint64_t t1 = fan.last;
        struct cpu_mark c1 = cpu_now();
        long lo = -1, hi = 0, reorders = -reorders0;
        for (int i = 0; i < ncentrals; i++) {
            long got = cen[i].count - mark[i];
            lo = lo < 0 || got < lo ? got : lo;
            hi = got > hi ? got : hi;
            gaps0 += cen[i].gaps - gmark[i];
            reorders += cen[i].reorders;
        }
        print_fan_stats(cen[0].count - values0, fan.delivered - delivered0, gaps0, reorders, count0, t0, t1, c0,
                        c1);
        /* what was sent but not yet read when the window closed */
        long unread = 0;
        for (int i = 0; i < ncentrals; i++) {
            if (fan_fds[i] >= 0)
                read_fan_datagrams(i);
            unread += cen[i].drained;
        }
        printf(" per_central_min=%ld per_central_max=%ld unread=%ld mtu=%u closed_by_contender=%ld", lo, hi,
               unread, acq.mtu, fan.closed);
    }
    feed.active = 0;
    for (int i = 0; i < ncentrals; i++) {
        if (cen[i].fd >= 0)
            close(cen[i].fd); /* = unsubscribe */
        cen[i].fd = fan_fds[i] = -1;
    }
    fan_n = 0;
    finish_sock_phase(!failed);
}

static int sock_writable;

static void on_writable(short revents)
{
    (void)revents; /* POLLOUT, or POLLHUP/POLLERR that the next send reports */
    sock_writable = 1;
}

/* ReadValue on `path`: 1 with the reply's first 4 bytes in rb.value, 0 on error. */
static struct {
    int done, ok;
    size_t size;
    uint8_t value[4];
} rb;

static int on_readback(sd_bus_message *m, void *ud, sd_bus_error *e)
{
    (void)ud, (void)e;
    const void *ptr;
    rb.done = 1;
    if (sd_bus_message_is_method_error(m, NULL) || sd_bus_message_read_array(m, 'y', &ptr, &rb.size) < 0)
        return 0;
    memcpy(rb.value, ptr, rb.size < 4 ? rb.size : 4);
    rb.ok = 1;
    return 0;
}

static int read_value(const char *path)
{
    memset(&rb, 0, sizeof rb);
    sd_bus_message *m = NULL;
    int r = sd_bus_message_new_method_call(bus, &m, app_sender, path, CHR_IFACE, "ReadValue");
    if (r < 0)
        die("new call", r);
    if ((r = append_options(m)) < 0)
        die("append", r);
    r = sd_bus_call_async(bus, NULL, m, on_readback, NULL, CALL_TIMEOUT_US);
    sd_bus_message_unref(m);
    if (r < 0)
        die("call", r);
    return run_until(&rb.done, 15.0) && rb.ok;
}

/* AcquireWrite on the write-without-response characteristic (WNR_UUID: bluetoothd puts
 * every write of an acquired characteristic on the socket, so gattd allows acquireWrite
 * only without "write"), n datagrams of the values writenr sends (4-byte LE counters
 * 0..n-1; no other phase writes this characteristic, so its value before the phase is
 * the configured 00 11 22 33), then ReadValue until it returns the last one.
 * The socket and the bus are two channels, so a read may overtake datagrams the contender
 * has not taken off the socket yet: such a read returns an earlier value of the sequence
 * (or, before the first datagram is taken, the value from before the phase) and is
 * repeated; readback_reads says how many reads it took. A value going backwards, or one
 * from outside the sequence after it started, is a wrong value: readback_ok=0. */
static void phase_writesock(long n)
{
    printf("BENCH contender=%s phase=writesock", label);
    int fd = acquire(wnr_path, "AcquireWrite");
    if (fd < 0) {
        printf(" status=acquire-failed error=%s\n", acq.error);
        fflush(stdout);
        return;
    }
    struct cpu_mark c0 = cpu_now();
    uint64_t t0 = now_ns();
    long blocked = 0;
    const char *failed = NULL;
    for (long i = 0; i < n && !failed && !fatal_exit; i++) {
        uint8_t v[4] = {(uint8_t)i, (uint8_t)(i >> 8), (uint8_t)(i >> 16), (uint8_t)(i >> 24)};
        for (;;) {
            ssize_t w = send(fd, v, sizeof v, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (w == (ssize_t)sizeof v)
                break;
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                /* the contender's receive queue is full: wait for room, serving the bus */
                blocked++;
                sock_writable = 0;
                extra_fd = fd;
                extra_events = POLLOUT;
                extra_ready = on_writable;
                uint64_t deadline = now_ns() + CALL_TIMEOUT_US * 1000ULL;
                while (!sock_writable && !fatal_exit && now_ns() < deadline)
                    pump(deadline);
                extra_fd = -1;
                if (!sock_writable) {
                    failed = "stalled";
                    break;
                }
                continue;
            }
            failed = w < 0 && (errno == EPIPE || errno == ECONNRESET) ? "closed_by_contender" : "send-failed";
            break;
        }
        if ((i & 63) == 63)
            while (sd_bus_process(bus, NULL) > 0)
                ;
    }
    uint32_t last = (uint32_t)(n - 1), previous = 0;
    long reads = 0;
    int readback_ok = 0, started = 0;
    uint64_t deadline = now_ns() + 10000000000ULL;
    while (!failed && !fatal_exit && now_ns() < deadline) {
        reads++;
        if (!read_value(wnr_path)) {
            failed = "readback-error";
            break;
        }
        uint32_t got = (uint32_t)rb.value[0] | (uint32_t)rb.value[1] << 8 | (uint32_t)rb.value[2] << 16 |
                       (uint32_t)rb.value[3] << 24;
        if (rb.size == 4 && got == last) {
            readback_ok = 1;
            break;
        }
        int in_sequence = rb.size == 4 && got < last;
        if (in_sequence ? got < previous : started)
            break; /* a wrong value: readback_ok=0 */
        if (in_sequence) {
            started = 1;
            previous = got;
        }
    }
    uint64_t t1 = now_ns();
    struct cpu_mark c1 = cpu_now();
    close(fd);
    if (failed) {
        printf(" status=%s n=%ld\n", failed, n);
    } else {
        double secs = (double)(t1 - t0) / 1e9;
        printf(" status=ok n=%ld secs=%.4f rate=%.0f readback_ok=%d readback_reads=%ld send_blocked=%ld mtu=%u", n,
               secs, (double)n / secs, readback_ok, reads, blocked, acq.mtu);
        print_cpu(c0, c1, n);
        printf("\n");
    }
    fflush(stdout);
}

/* ---- contender ------------------------------------------------------------ */

static void launch(char **argv, const char *address, const char *mode)
{
    notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(notify_path, sizeof notify_path, "/tmp/loadgen-notify-%d", getpid());
    unlink(notify_path);
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", notify_path);
    if (bind(notify_fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        die("bind notify socket", errno);
    fflush(stdout);
    t_exec = now_ns();
    child = fork();
    if (child < 0)
        die("fork", errno);
    if (child == 0) {
        setenv("DBUS_SYSTEM_BUS_ADDRESS", address, 1);
        setenv("NOTIFY_SOCKET", notify_path, 1);
        setenv("BENCH_NOTIFY", mode, 1);
        dup2(2, 1);
        execvp(argv[0], argv);
        fprintf(stderr, "loadgen: exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
}

static void stop_child(void)
{
    if (child <= 0)
        return;
    stopping = 1;
    kill(child, SIGTERM);
    for (int i = 0; i < 200 && child > 0; i++) {
        if (waitpid(child, NULL, WNOHANG) == child)
            child = -1;
        else
            pump(now_ns() + 10000000ULL); /* keep answering (UnregisterApplication) while it exits */
    }
    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        child = -1;
    }
}

static void copy_smaps(pid_t pid, const char *to)
{
    char path[64], buf[65536];
    snprintf(path, sizeof path, "/proc/%d/smaps", (int)pid);
    int in = open(path, O_RDONLY | O_CLOEXEC);
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ssize_t n;
    if (in < 0 || out < 0) {
        fprintf(stderr, "loadgen: --smaps: %s: %s\n", in < 0 ? path : to, strerror(errno));
    } else {
        while ((n = read(in, buf, sizeof buf)) > 0)
            if (write(out, buf, (size_t)n) != n) {
                fprintf(stderr, "loadgen: --smaps: %s: %s\n", to, strerror(errno));
                break;
            }
    }
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
}

static void usage(void)
{
    fprintf(stderr, "usage: loadgen [--address A] [--label L] [--calls N] [--phases p1,p2,...]\n"
                    "               [--notify-mode timer|flood] [--notify-secs S] [--smaps FILE] [--feed ID]\n"
                    "               [--handler PROG] [--centrals N (1-64)]\n"
                    "               -- contender argv...\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *address = getenv("DBUS_SYSTEM_BUS_ADDRESS");
    const char *phases = "ping,startup,read1,read8,write,writenr,notify,rss";
    const char *mode = "timer";
    long calls = 10000;
    double notify_secs = 3.0, reg_timeout = 30.0;
    const char *smaps_out = NULL;
    const char *handler_prog = NULL;
    static const struct option opts[] = {
        {"address", required_argument, 0, 'a'},     {"label", required_argument, 0, 'l'},
        {"calls", required_argument, 0, 'n'},       {"phases", required_argument, 0, 'p'},
        {"notify-mode", required_argument, 0, 'm'}, {"notify-secs", required_argument, 0, 's'},
        {"register-timeout", required_argument, 0, 't'}, {"smaps", required_argument, 0, 'S'},
        {"feed", required_argument, 0, 'F'},       {"handler", required_argument, 0, 'H'},
        {"centrals", required_argument, 0, 'C'},
        {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "+a:l:n:p:m:s:t:S:F:H:C:", opts, NULL)) != -1) {
        switch (c) {
        case 'a': address = optarg; break;
        case 'l': label = optarg; break;
        case 'n': calls = atol(optarg); break;
        case 'p': phases = optarg; break;
        case 'm': mode = optarg; break;
        case 's': notify_secs = atof(optarg); break;
        case 't': reg_timeout = atof(optarg); break;
        case 'S': smaps_out = optarg; break;
        case 'F': feed.id = optarg; break;
        case 'H': handler_prog = optarg; break;
        case 'C': ncentrals = atoi(optarg); break;
        default: usage();
        }
    }
    if (!address || optind >= argc || calls < 1 || ncentrals < 0 || ncentrals > MAX_CENTRALS)
        usage();
    signal(SIGPIPE, SIG_IGN);

    int r = sd_bus_new(&bus);
    if (r >= 0)
        r = sd_bus_set_address(bus, address);
    if (r >= 0)
        r = sd_bus_set_bus_client(bus, 1);
    if (r >= 0)
        r = sd_bus_start(bus);
    if (r < 0)
        die("connect", r);
    {
        /* dbus-daemon answers for itself: its pid, for bus_schedstat_s_per_10k. */
        sd_bus_message *reply = NULL;
        uint32_t pid = 0;
        if (sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "GetConnectionUnixProcessID", NULL, &reply, "s", "org.freedesktop.DBus") >= 0 &&
            sd_bus_message_read(reply, "u", &pid) >= 0)
            bus_pid = (pid_t)pid;
        sd_bus_message_unref(reply);
    }
    if ((r = sd_bus_request_name(bus, "org.bluez", 0)) < 0)
        die("request org.bluez", r);
    sd_bus_add_object_manager(bus, NULL, "/");
    sd_bus_add_object_vtable(bus, NULL, "/org/bluez", "org.bluez.AgentManager1", agent_manager_vtable, NULL);
    sd_bus_add_object_vtable(bus, NULL, "/org/bluez/hci0", "org.bluez.Adapter1", adapter_vtable, NULL);
    sd_bus_add_object_vtable(bus, NULL, "/org/bluez/hci0", "org.bluez.GattManager1", gatt_manager_vtable, NULL);
    sd_bus_add_object_vtable(bus, NULL, "/org/bluez/hci0", "org.bluez.LEAdvertisingManager1",
                             adv_manager_vtable, NULL);
    add_centrals(ncentrals);

    int launched = 0;
    char *list = strdup(phases);
    for (char *ph = strtok(list, ","); ph && !fatal_exit; ph = strtok(NULL, ",")) {
        if (!strcmp(ph, "ping")) {
            phase_rpc("ping", CALL_PING, calls, 1, 0);
            continue;
        }
        if (!launched) {
            launch(argv + optind, address, mode);
            launched = 1;
            uint64_t deadline = now_ns() + (uint64_t)(reg_timeout * 1e9);
            while (!registered && !fatal_exit && now_ns() < deadline)
                pump(deadline);
            if (registered <= 0) {
                printf("BENCH contender=%s phase=startup status=%s\n", label,
                       registered < 0 ? "rejected" : fatal_exit ? "died" : "timeout");
                break;
            }
            if (!rw_path[0]) {
                printf("BENCH contender=%s phase=startup status=no-rw-characteristic\n", label);
                break;
            }
            if (handler_prog && start_handler(handler_prog, address) < 0) {
                printf("BENCH contender=%s phase=startup status=handler-not-registered\n", label);
                break;
            }
            /* warm-up: some runtimes compile or cache on the first calls; checks the value */
            struct rpc w = {.kind = CALL_READ, .check_value = 1, .expect = {0x00, 0x11, 0x22, 0x33}};
            long wn = calls / 10 < 200 ? calls / 10 + 1 : 200;
            int wr = rpc_run(&w, wn, 1, 30);
            if (wr < 0 || w.errors || w.bad)
                fprintf(stderr, "loadgen: %s: warm-up reads: %ld errors, %ld wrong values\n", label, w.errors,
                        w.bad);
            rpc_free(&w);
            /* READY=1 may trail registration a little */
            uint64_t ready_deadline = now_ns() + 200000000ULL;
            while (!t_ready && now_ns() < ready_deadline)
                pump(ready_deadline);
        }
        if (!strcmp(ph, "startup")) {
            printf("BENCH contender=%s phase=startup status=ok exec_to_regcall_ms=%.2f exec_to_registered_ms=%.2f",
                   label, (double)(t_regcall - t_exec) / 1e6, (double)(t_registered - t_exec) / 1e6);
            if (t_ready)
                printf(" exec_to_ready_ms=%.2f", (double)(t_ready - t_exec) / 1e6);
            else
                printf(" exec_to_ready_ms=-");
            printf(" services=%d seq_char=%d\n", services_found, seq_path[0] != 0);
        } else if (!strcmp(ph, "read1"))
            phase_rpc("read1", CALL_READ, calls, 1, 1);
        else if (!strcmp(ph, "read8"))
            phase_rpc("read8", CALL_READ, calls, 8, 1);
        else if (!strcmp(ph, "write"))
            phase_rpc("write", CALL_WRITE, calls, 1, 0);
        else if (!strcmp(ph, "writenr"))
            phase_writenr(calls);
        else if (!strcmp(ph, "writesock")) {
            if (!wnr_path[0])
                printf("BENCH contender=%s phase=writesock status=no-write-without-response-characteristic\n", label);
            else
                phase_writesock(calls);
        }
        else if (!strcmp(ph, "notifysock")) {
            if (!seq_path[0])
                printf("BENCH contender=%s phase=notifysock status=no-seq-characteristic\n", label);
            else if (ncentrals)
                phase_fanout_sock(mode, notify_secs, calls * 100);
            else
                phase_notifysock(mode, notify_secs, calls * 100);
        }
        else if (!strcmp(ph, "notify")) {
            if (!seq_path[0])
                printf("BENCH contender=%s phase=notify status=no-seq-characteristic\n", label);
            else
                phase_notify(mode, notify_secs, calls * 100);
        } else if (!strcmp(ph, "rss")) {
            printf("BENCH contender=%s phase=rss status=ok vmhwm_kb=%ld vmrss_kb=%ld\n", label,
                   proc_status_kb(child, "VmHWM"), proc_status_kb(child, "VmRSS"));
            if (smaps_out)
                copy_smaps(child, smaps_out);
        }
        else
            fprintf(stderr, "loadgen: unknown phase %s\n", ph);
        fflush(stdout);
    }
    fflush(stdout);
    stop_handler();
    stop_child();
    if (notify_path[0])
        unlink(notify_path);
    sd_bus_flush_close_unref(bus);
    return fatal_exit ? 1 : 0;
}
