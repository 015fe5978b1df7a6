// SPDX-License-Identifier: MIT
/*
 * channel-relay: the least a daemon can do to relay an L2CAP channel to a program, the
 * ceiling gattd's relay (Sources/DaemonCore/Channels/ChannelRelay.swift) is measured
 * against in bench/ceiling/channels. It does the same job in the same loop shape:
 *
 *   channel-relay PSM -- PROGRAM [ARG...]
 *
 * listens on an LE L2CAP socket (AF_BLUETOOTH/SOCK_SEQPACKET/BTPROTO_L2CAP, bound to PSM;
 * under Tests/integration/fake_l2cap.c as the bench runs it), accepts one channel at a time
 * (non-blocking, with a 4 MiB receive buffer asked for as gattd does), makes a SOCK_SEQPACKET
 * socket pair, starts PROGRAM (posix_spawn, no shell) with one end as its standard input and
 * output (blocking), and relays datagram for datagram in both directions on one epoll set:
 * per wake-up at most 32 datagrams each way, a datagram that meets a full sink waits (the
 * source is then not watched, the sink is watched for room), a hung-up source is drained,
 * and either side closing ends the channel. Each datagram is received into a buffer of the
 * receive MTU + 1 (65536) and sent from there: no copy, no allocation. Prints "listening
 * psm=0xPP" once listening, and "closed in=N out=N reason" per channel; SIGTERM ends it
 * (exit 0, so that callgrind writes its file).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define AF_BT 31
#define BTPROTO_L2CAP 0
#define SOL_BT 274
#define BT_RCVMTU 13
#define BATCH 32
#define RECEIVE_MTU 65535

extern char **environ;

struct sockaddr_l2 {
    unsigned short l2_family;
    uint16_t l2_psm;
    uint8_t l2_bdaddr[6];
    uint16_t l2_cid;
    uint8_t l2_bdaddr_type;
};

struct direction {
    int from, to;
    uint8_t buffer[RECEIVE_MTU + 1];
    ssize_t pending; /* bytes waiting in buffer for the sink; -1 none */
    int hung_up;
    unsigned long long bytes;
};

static volatile sig_atomic_t stopping;
static void on_term(int sig) { (void)sig; stopping = 1; }

/* Moves datagrams; 0 to go on, 1 when the channel must end. */
static int pump(struct direction *d)
{
    for (int moved = 0; d->hung_up || moved < BATCH; moved++) {
        if (d->pending < 0) {
            ssize_t n = recv(d->from, d->buffer, sizeof d->buffer, MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return 0;
            if (n < 0 && (errno == ENOTCONN || errno == ECONNRESET)) {
                d->hung_up = 1;
                return 0;
            }
            if (n < 0)
                return 1;
            if (n == 0) { /* end of file (an empty SDU cannot be told from it here) */
                d->hung_up = 1;
                return 0;
            }
            if (n > RECEIVE_MTU)
                return 1;
            d->pending = n;
        }
        ssize_t w = send(d->to, d->buffer, (size_t)d->pending, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (w < 0)
            return 1;
        d->bytes += (unsigned long long)d->pending;
        d->pending = -1;
    }
    return 0;
}

static void set_interest(int ep, int fd, uint32_t *current, uint32_t wanted)
{
    if (*current == wanted)
        return;
    struct epoll_event ev = {.events = wanted, .data.fd = fd};
    epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
    *current = wanted;
}

static void relay(int central, char **argv)
{
    int ends[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, ends) < 0) {
        perror("channel-relay: socketpair");
        close(central);
        return;
    }
    fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) & ~O_NONBLOCK);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, ends[1], 0);
    posix_spawn_file_actions_adddup2(&actions, ends[1], 1);
    pid_t child;
    int r = posix_spawnp(&child, argv[0], &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(ends[1]);
    if (r != 0) {
        fprintf(stderr, "channel-relay: %s: %s\n", argv[0], strerror(r));
        close(ends[0]);
        close(central);
        return;
    }
    int program = ends[0];
    static struct direction up, down; /* central -> program, program -> central */
    up = (struct direction){.from = central, .to = program, .pending = -1};
    down = (struct direction){.from = program, .to = central, .pending = -1};
    int ep = epoll_create1(EPOLL_CLOEXEC);
    uint32_t central_events = EPOLLIN, program_events = EPOLLIN;
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = central};
    epoll_ctl(ep, EPOLL_CTL_ADD, central, &ev);
    ev.data.fd = program;
    epoll_ctl(ep, EPOLL_CTL_ADD, program, &ev);
    const char *reason = "gattd stops";
    while (!stopping) {
        struct epoll_event events[2];
        int n = epoll_wait(ep, events, 2, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            reason = "epoll_wait failed";
            break;
        }
        for (int i = 0; i < n; i++) {
            if (!(events[i].events & (EPOLLHUP | EPOLLERR)))
                continue;
            if (events[i].data.fd == central)
                up.hung_up = 1;
            else
                down.hung_up = 1;
        }
        if (pump(&up)) {
            reason = "relaying to the program failed";
            break;
        }
        if (pump(&down)) {
            reason = "relaying to the central failed";
            break;
        }
        if (up.hung_up && up.pending < 0) {
            reason = "the central closed the channel";
            break;
        }
        if (down.hung_up && down.pending < 0) {
            reason = "the program closed its end";
            break;
        }
        uint32_t c = 0, p = 0;
        if (up.pending < 0 && !up.hung_up)
            c |= EPOLLIN;
        if (down.pending >= 0)
            c |= EPOLLOUT;
        if (down.pending < 0 && !down.hung_up)
            p |= EPOLLIN;
        if (up.pending >= 0)
            p |= EPOLLOUT;
        set_interest(ep, central, &central_events, c);
        set_interest(ep, program, &program_events, p);
    }
    close(ep);
    close(central);
    close(program);
    waitpid(child, NULL, 0);
    printf("closed in=%llu out=%llu %s\n", up.bytes, down.bytes, reason);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc < 4 || strcmp(argv[2], "--") != 0) {
        fprintf(stderr, "usage: channel-relay PSM -- PROGRAM [ARG...]\n");
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_term};
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    int listener = socket(AF_BT, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, BTPROTO_L2CAP);
    if (listener < 0) {
        perror("channel-relay: socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP)");
        return 1;
    }
    struct sockaddr_l2 address = {.l2_family = AF_BT, .l2_psm = (uint16_t)strtol(argv[1], NULL, 0),
                                  .l2_bdaddr_type = 1 /* BDADDR_LE_PUBLIC */};
    uint16_t mtu = RECEIVE_MTU;
    if (bind(listener, (struct sockaddr *)&address, sizeof address) < 0 ||
        setsockopt(listener, SOL_BT, BT_RCVMTU, &mtu, sizeof mtu) < 0 || listen(listener, 5) < 0) {
        perror("channel-relay: bind/listen");
        return 1;
    }
    printf("listening psm=0x%x\n", address.l2_psm);
    fflush(stdout);
    while (!stopping) {
        struct sockaddr_l2 peer;
        socklen_t length = sizeof peer;
        int central = accept4(listener, (struct sockaddr *)&peer, &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (central < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                struct epoll_event ev = {.events = EPOLLIN};
                int ep = epoll_create1(EPOLL_CLOEXEC);
                epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev);
                epoll_wait(ep, &ev, 1, -1); /* EINTR on SIGTERM */
                close(ep);
                continue;
            }
            if (errno == EINTR)
                continue;
            perror("channel-relay: accept");
            return 1;
        }
        int buffer = 4 << 20;
        if (setsockopt(central, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof buffer) < 0)
            setsockopt(central, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
        relay(central, argv + 3);
    }
    close(listener);
    return 0;
}
