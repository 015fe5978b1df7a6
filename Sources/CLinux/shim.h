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
#endif
