// SPDX-License-Identifier: MIT
/*
 * channel-central: the central's end of one L2CAP channel as Tests/integration/fake_l2cap.c
 * stands it in (an AF_UNIX SOCK_SEQPACKET connection to the abstract address
 * "\0gattd-fake-l2cap/NAME/0xPSM", one datagram per SDU), for bench/ceiling/channels.
 *
 *   channel-central --name NAME --psm PSM --bytes N --sdu S [--window W] [--pid PID]
 *                   [--label L]
 *
 * It echoes N bytes through whoever listens there (gattd's relay and its program, a
 * program gattd passed the descriptor to, or the C relay): SDUs of S bytes (the last may be
 * shorter), each numbered (4-byte little-endian index, then byte i = (index + i) & 0xFF), at
 * most W bytes sent and not yet echoed (default 65536), and checks every SDU back, whole,
 * in order. A first SDU is echoed before the measurement starts, so that accepting the
 * channel and starting its program are not in it. With --pid it reads the on-CPU time of
 * PID's threads (/proc/PID/task/TID/schedstat, field 1; field 3, the times put on the CPU)
 * before and after. Prints one line:
 *
 *   CHAN label=L sdu=S bytes=N sdus=K secs=T cpu_ns=C slices=X
 *
 * (cpu_ns and slices -1 without --pid) and exits 0; anything wrong: a message on stderr
 * and exit 1.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
    fprintf(stderr, "channel-central: %s: %s\n", what, strerror(errno));
    exit(1);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* On-CPU nanoseconds of pid's threads, and the times they were put on the CPU. */
static long long sched_ns(pid_t pid, long long *slices)
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
        if (fscanf(f, "%llu %llu %llu", &ns, &wait, &count) == 3) {
            sum += (long long)ns;
            runs += (long long)count;
        }
        fclose(f);
    }
    closedir(d);
    *slices = runs;
    return sum;
}

static size_t fill(uint8_t *out, uint32_t index, size_t size)
{
    memcpy(out, &index, 4);
    for (size_t i = 4; i < size; i++)
        out[i] = (uint8_t)(index + i);
    return size;
}

int main(int argc, char **argv)
{
    const char *name = NULL, *label = "central";
    long psm = -1, sdu = 0;
    long long total = 0, window = 65536;
    pid_t pid = 0;
    static const struct option opts[] = {
        {"name", required_argument, 0, 'n'}, {"psm", required_argument, 0, 'p'},
        {"bytes", required_argument, 0, 'b'}, {"sdu", required_argument, 0, 's'},
        {"window", required_argument, 0, 'w'}, {"pid", required_argument, 0, 'P'},
        {"label", required_argument, 0, 'l'}, {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'n': name = optarg; break;
        case 'p': psm = strtol(optarg, NULL, 0); break;
        case 'b': total = atoll(optarg); break;
        case 's': sdu = atol(optarg); break;
        case 'w': window = atoll(optarg); break;
        case 'P': pid = (pid_t)atol(optarg); break;
        case 'l': label = optarg; break;
        default: goto usage;
        }
    }
    if (!name || psm < 0 || total < 1 || sdu < 4 || sdu > 65535 || window < sdu) {
    usage:
        fprintf(stderr, "usage: channel-central --name NAME --psm PSM --bytes N --sdu S (4-65535) [--window W >= S] "
                        "[--pid PID] [--label L]\n");
        return 2;
    }

    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket");
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    int n = snprintf(un.sun_path + 1, sizeof un.sun_path - 1, "gattd-fake-l2cap/%s/0x%lx", name, psm);
    if (connect(fd, (struct sockaddr *)&un, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0)
        die("connect");

    static uint8_t out[65536], in[65536 + 1], want[65536];
    /* The first SDU, echoed before the measurement (blocking). */
    size_t first = fill(out, 0, (size_t)sdu);
    if (send(fd, out, first, 0) != (ssize_t)first)
        die("send (first SDU)");
    ssize_t got = recv(fd, in, sizeof in, 0);
    if (got < 0)
        die("recv (first SDU)");
    if (got != (ssize_t)first || memcmp(in, out, first) != 0) {
        fprintf(stderr, "channel-central: the first SDU came back as %zd bytes, not the %zu sent\n", got, first);
        return 1;
    }

    long long cpu0 = -1, cpu1 = -1, slices0 = 0, slices1 = 0;
    if (pid > 0 && (cpu0 = sched_ns(pid, &slices0)) < 0)
        die("schedstat of --pid");
    double t0 = now();
    long long sent = 0, echoed = 0;
    uint32_t next_out = 1, next_in = 1;
    while (echoed < total) {
        long long room = window - (sent - echoed);
        long long left = total - sent;
        size_t size = (size_t)(left < sdu ? left : sdu);
        int can_send = left > 0 && room >= (long long)size;
        struct pollfd p = {.fd = fd, .events = POLLIN | (can_send ? POLLOUT : 0)};
        if (poll(&p, 1, 30000) <= 0) {
            fprintf(stderr, "channel-central: nothing moved for 30 s (%lld of %lld bytes echoed)\n", echoed, total);
            return 1;
        }
        if (p.revents & POLLIN) {
            for (;;) {
                got = recv(fd, in, sizeof in, MSG_DONTWAIT);
                if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                    break;
                if (got < 0)
                    die("recv");
                if (got == 0) {
                    fprintf(stderr, "channel-central: the channel closed after %lld of %lld bytes echoed\n", echoed,
                            total);
                    return 1;
                }
                long long expected_left = total - echoed;
                size_t expected = (size_t)(expected_left < sdu ? expected_left : sdu);
                fill(want, next_in, expected);
                if ((size_t)got != expected || memcmp(in, want, expected) != 0) {
                    fprintf(stderr, "channel-central: SDU %u came back wrong (%zd bytes, expected %zu)\n", next_in, got,
                            expected);
                    return 1;
                }
                echoed += got;
                next_in++;
            }
        }
        if ((p.revents & POLLOUT) && can_send) {
            /* As many as the window and the socket take. */
            while (sent < total) {
                left = total - sent;
                size = (size_t)(left < sdu ? left : sdu);
                if (window - (sent - echoed) < (long long)size)
                    break;
                fill(out, next_out, size);
                ssize_t w = send(fd, out, size, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                    break;
                if (w != (ssize_t)size)
                    die("send");
                sent += (long long)size;
                next_out++;
            }
        }
        if (p.revents & (POLLHUP | POLLERR) && !(p.revents & POLLIN)) {
            fprintf(stderr, "channel-central: the channel closed after %lld of %lld bytes echoed\n", echoed, total);
            return 1;
        }
    }
    double t1 = now();
    if (pid > 0 && (cpu1 = sched_ns(pid, &slices1)) < 0)
        die("schedstat of --pid");
    printf("CHAN label=%s sdu=%ld bytes=%lld sdus=%u secs=%.4f cpu_ns=%lld slices=%lld\n", label, sdu, total,
           next_in - 1, t1 - t0, pid > 0 ? cpu1 - cpu0 : -1, pid > 0 ? slices1 - slices0 : -1);
    close(fd);
    return 0;
}
