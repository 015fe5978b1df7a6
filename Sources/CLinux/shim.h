// SPDX-License-Identifier: MIT
// Linux-only APIs that Swift's Glibc module does not export (epoll, eventfd, signalfd,
// pidfd; sched_getattr/sched_setattr, which glibc does not wrap). Headers, plus two inline
// wrappers for the scheduler calls (syscall(2) is variadic, so Swift cannot call it).
// Used by Mainloop, DaemonCore (child processes) and SystemCalls (the scheduler slice).
#ifndef CLINUX_SHIM_H
#define CLINUX_SHIM_H
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <spawn.h>
#include <signal.h>
#include <time.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <sys/socket.h>
#include <string.h>
#include <endian.h>
#include <errno.h>

/* struct sched_attr as of Linux 3.14 (SCHED_ATTR_SIZE_VER0, 48 bytes); glibc has no copy. */
struct clinux_sched_attr {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime; /* SCHED_OTHER/SCHED_BATCH since Linux 6.12: the slice, in ns */
    uint64_t sched_deadline;
    uint64_t sched_period;
};

/* sched_getattr(2) of the calling thread; 0 or -1 with errno. */
static inline int clinux_sched_getattr(struct clinux_sched_attr *attr)
{
    return (int)syscall(SYS_sched_getattr, 0, attr, (unsigned int)sizeof *attr, 0U);
}

/* sched_setattr(2) of the calling thread; 0 or -1 with errno. */
static inline int clinux_sched_setattr(struct clinux_sched_attr *attr)
{
    attr->size = (uint32_t)sizeof *attr;
    return (int)syscall(SYS_sched_setattr, 0, attr, 0U);
}

/* ioctl(2) SIOCOUTQ: bytes this socket sent that its peer has not read yet (for AF_UNIX,
 * what the peer's queue still holds); 0 or -1 with errno. ioctl is variadic, so Swift
 * cannot call it. */
static inline int clinux_unread_by_peer(int fd, int *bytes)
{
    return ioctl(fd, SIOCOUTQ, bytes);
}

/* L2CAP LE credit-based channels. Debian's linux-libc-dev has no Bluetooth headers (they
 * come with libbluetooth-dev, which gattd does not depend on), so the few values of the
 * kernel's socket interface (include/net/bluetooth/bluetooth.h and l2cap.h) are spelt here. */
#define CLINUX_AF_BLUETOOTH 31
#define CLINUX_BTPROTO_L2CAP 0
#define CLINUX_SOL_BLUETOOTH 274
#define CLINUX_BT_SECURITY 4
#define CLINUX_BT_SNDMTU 12
#define CLINUX_BT_RCVMTU 13
#define CLINUX_BDADDR_LE_PUBLIC 1
#define CLINUX_BDADDR_LE_RANDOM 2

/* struct sockaddr_l2: the address of an L2CAP socket (address little-endian, as on air). */
struct clinux_sockaddr_l2 {
    sa_family_t l2_family;
    uint16_t l2_psm;
    uint8_t l2_bdaddr[6];
    uint16_t l2_cid;
    uint8_t l2_bdaddr_type;
};

/* An L2CAP address: PSM (host order), address (as on air, least significant byte first)
 * and address type. */
struct clinux_l2cap_address {
    uint16_t psm;
    uint8_t address[6];
    uint8_t type;
};

/* A non-blocking, close-on-exec AF_BLUETOOTH/SOCK_SEQPACKET/BTPROTO_L2CAP socket; -1 with
 * errno (EAFNOSUPPORT outside the host's network namespace or without Bluetooth). */
static inline int clinux_l2cap_socket(void)
{
    return socket(CLINUX_AF_BLUETOOTH, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, CLINUX_BTPROTO_L2CAP);
}

/* bind(2) to any adapter, an LE address type (which makes the socket an LE credit-based
 * one) and `psm` (0: the kernel picks a dynamic one). */
static inline int clinux_l2cap_bind_le(int fd, uint16_t psm)
{
    struct clinux_sockaddr_l2 address;
    memset(&address, 0, sizeof address);
    address.l2_family = CLINUX_AF_BLUETOOTH;
    address.l2_psm = htole16(psm);
    address.l2_bdaddr_type = CLINUX_BDADDR_LE_PUBLIC;
    return bind(fd, (struct sockaddr *)&address, sizeof address);
}

static inline void clinux_l2cap_unpack(const struct clinux_sockaddr_l2 *raw, struct clinux_l2cap_address *out)
{
    out->psm = le16toh(raw->l2_psm);
    memcpy(out->address, raw->l2_bdaddr, 6);
    out->type = raw->l2_bdaddr_type;
}

/* getsockname(2) (peer 0) or getpeername(2) (peer 1) of an L2CAP socket. */
static inline int clinux_l2cap_name(int fd, int peer, struct clinux_l2cap_address *out)
{
    struct clinux_sockaddr_l2 raw;
    socklen_t length = sizeof raw;
    memset(&raw, 0, sizeof raw);
    int result = peer ? getpeername(fd, (struct sockaddr *)&raw, &length)
                      : getsockname(fd, (struct sockaddr *)&raw, &length);
    if (result == 0) clinux_l2cap_unpack(&raw, out);
    return result;
}

/* accept4(2), non-blocking and close-on-exec, with the peer's address. */
static inline int clinux_l2cap_accept(int fd, struct clinux_l2cap_address *peer)
{
    struct clinux_sockaddr_l2 raw;
    socklen_t length = sizeof raw;
    memset(&raw, 0, sizeof raw);
    int child = accept4(fd, (struct sockaddr *)&raw, &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (child >= 0) clinux_l2cap_unpack(&raw, peer);
    return child;
}

/* BT_SECURITY: struct bt_security { level, key_size } (key size 0: the kernel's minimum). */
static inline int clinux_l2cap_set_security(int fd, uint8_t level)
{
    uint8_t security[2] = { level, 0 };
    return setsockopt(fd, CLINUX_SOL_BLUETOOTH, CLINUX_BT_SECURITY, security, sizeof security);
}

static inline int clinux_l2cap_set_receive_mtu(int fd, uint16_t mtu)
{
    return setsockopt(fd, CLINUX_SOL_BLUETOOTH, CLINUX_BT_RCVMTU, &mtu, sizeof mtu);
}

/* BT_SNDMTU (send 1) or BT_RCVMTU (send 0) of a connected channel; -1 with errno. */
static inline int clinux_l2cap_mtu(int fd, int send)
{
    uint16_t mtu = 0;
    socklen_t length = sizeof mtu;
    int result = getsockopt(fd, CLINUX_SOL_BLUETOOTH, send ? CLINUX_BT_SNDMTU : CLINUX_BT_RCVMTU, &mtu, &length);
    return result == 0 ? (int)mtu : -1;
}
#endif
