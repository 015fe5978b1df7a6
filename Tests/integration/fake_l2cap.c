/* SPDX-License-Identifier: MIT
 *
 * A stand-in for the kernel's LE L2CAP sockets, preloaded into gattd (LD_PRELOAD) by
 * Tests/integration/test_python_channels.py on hosts without AF_BLUETOOTH (this CI's).
 * It shares no code with gattd and knows only the socket interface (docs/channels.md,
 * "Kernel facts"): socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP) becomes an AF_UNIX
 * SOCK_SEQPACKET socket; bind to PSM p binds the abstract address
 * "\0gattd-fake-l2cap/$FAKE_L2CAP_NAME/0xPP" (PSM 0: the first free of 0x80...0xFF), where
 * a test "central" connects once gattd listens on it (listen passes through): bound and not
 * listening, the address is held and a central's connect fails with ECONNREFUSED, as the
 * kernel holds the PSM and answers "PSM not supported". accept names the peer
 * $FAKE_L2CAP_PEER (an LE public address); SOL_BLUETOOTH options are taken and
 * BT_SNDMTU/BT_RCVMTU answered ($FAKE_L2CAP_SNDMTU, the BT_RCVMTU set on the listener).
 * gattd closing (or shutting down) an accepted socket is the central's end of file.
 * Every other descriptor passes through untouched. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define FAKE_AF_BLUETOOTH 31
#define FAKE_SOL_BLUETOOTH 274
#define FAKE_BT_SNDMTU 12
#define FAKE_BT_RCVMTU 13
#define MAX_FDS 4096

struct fake_sockaddr_l2 {
    unsigned short l2_family;
    uint16_t l2_psm;
    uint8_t l2_bdaddr[6];
    uint16_t l2_cid;
    uint8_t l2_bdaddr_type;
};

/* 0: not ours; else the PSM + 1 (a listener's or a channel's). */
static int fake_psm[MAX_FDS];
static int fake_is_l2cap[MAX_FDS];
static uint16_t fake_rcvmtu[MAX_FDS];

#define REAL(name) \
    static __typeof__(&name) real_##name; \
    if (!real_##name) real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

static int ours(int fd) { return fd >= 0 && fd < MAX_FDS && fake_is_l2cap[fd]; }

static socklen_t abstract_name(struct sockaddr_un *un, int psm)
{
    const char *name = getenv("FAKE_L2CAP_NAME");
    memset(un, 0, sizeof *un);
    un->sun_family = AF_UNIX;
    int n = snprintf(un->sun_path + 1, sizeof un->sun_path - 1, "gattd-fake-l2cap/%s/0x%x", name ? name : "", psm);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static void fill(struct sockaddr *address, socklen_t *length, int psm, int peer)
{
    if (!address || !length) return;
    struct fake_sockaddr_l2 l2;
    memset(&l2, 0, sizeof l2);
    l2.l2_family = FAKE_AF_BLUETOOTH;
    l2.l2_psm = (uint16_t)psm;
    l2.l2_bdaddr_type = 1; /* BDADDR_LE_PUBLIC */
    const char *text = peer ? getenv("FAKE_L2CAP_PEER") : NULL;
    unsigned b[6];
    if (text && sscanf(text, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) == 6)
        for (int i = 0; i < 6; i++) l2.l2_bdaddr[i] = (uint8_t)b[5 - i]; /* little-endian, as on air */
    socklen_t n = *length < sizeof l2 ? *length : (socklen_t)sizeof l2;
    memcpy(address, &l2, n);
    *length = sizeof l2;
}

int socket(int domain, int type, int protocol)
{
    REAL(socket);
    if (domain != FAKE_AF_BLUETOOTH || (type & 0xf) != SOCK_SEQPACKET) return real_socket(domain, type, protocol);
    int fd = real_socket(AF_UNIX, type, 0);
    if (fd >= 0 && fd < MAX_FDS) { fake_is_l2cap[fd] = 1; fake_psm[fd] = 0; fake_rcvmtu[fd] = 672; }
    return fd;
}

int bind(int fd, const struct sockaddr *address, socklen_t length)
{
    REAL(bind);
    if (!ours(fd)) return real_bind(fd, address, length);
    const struct fake_sockaddr_l2 *l2 = (const struct fake_sockaddr_l2 *)address;
    int wanted = l2->l2_psm, first = wanted ? wanted : 0x80, last = wanted ? wanted : 0xff;
    for (int psm = first; psm <= last; psm++) {
        struct sockaddr_un un;
        socklen_t n = abstract_name(&un, psm);
        if (real_bind(fd, (struct sockaddr *)&un, n) == 0) { fake_psm[fd] = psm; return 0; }
        if (errno != EADDRINUSE) return -1;
    }
    errno = EADDRINUSE;
    return -1;
}

int setsockopt(int fd, int level, int name, const void *value, socklen_t length)
{
    REAL(setsockopt);
    if (!ours(fd) || level != FAKE_SOL_BLUETOOTH) return real_setsockopt(fd, level, name, value, length);
    if (name == FAKE_BT_RCVMTU && length >= 2) memcpy(&fake_rcvmtu[fd], value, 2);
    return 0;
}

int getsockopt(int fd, int level, int name, void *value, socklen_t *length)
{
    REAL(getsockopt);
    if (!ours(fd) || level != FAKE_SOL_BLUETOOTH) return real_getsockopt(fd, level, name, value, length);
    if ((name != FAKE_BT_SNDMTU && name != FAKE_BT_RCVMTU) || *length < 2) { errno = ENOPROTOOPT; return -1; }
    const char *text = getenv("FAKE_L2CAP_SNDMTU");
    uint16_t mtu = name == FAKE_BT_RCVMTU ? fake_rcvmtu[fd] : (uint16_t)(text ? atoi(text) : 247);
    memcpy(value, &mtu, 2);
    *length = 2;
    return 0;
}

int getsockname(int fd, struct sockaddr *address, socklen_t *length)
{
    REAL(getsockname);
    if (!ours(fd)) return real_getsockname(fd, address, length);
    fill(address, length, fake_psm[fd], 0);
    return 0;
}

int getpeername(int fd, struct sockaddr *address, socklen_t *length)
{
    REAL(getpeername);
    if (!ours(fd)) return real_getpeername(fd, address, length);
    fill(address, length, fake_psm[fd], 1);
    return 0;
}

int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags)
{
    REAL(accept4);
    if (!ours(fd)) return real_accept4(fd, address, length, flags);
    int child = real_accept4(fd, NULL, NULL, flags);
    if (child < 0) return child;
    if (child < MAX_FDS) { fake_is_l2cap[child] = 1; fake_psm[child] = fake_psm[fd]; fake_rcvmtu[child] = fake_rcvmtu[fd]; }
    fill(address, length, fake_psm[fd], 1);
    return child;
}

int accept(int fd, struct sockaddr *address, socklen_t *length)
{
    return accept4(fd, address, length, 0);
}

int close(int fd)
{
    REAL(close);
    if (fd >= 0 && fd < MAX_FDS) fake_is_l2cap[fd] = 0;
    return real_close(fd);
}
