/* SPDX-License-Identifier: MIT
 *
 * pidfd_open for a gattd under valgrind 3.19 (Debian 12's), which does not know the system
 * call (434) and answers ENOSYS: gattd then cannot start a channel's program. Preloaded
 * (LD_PRELOAD) by bench/ceiling/channels into the gattd it runs under callgrind, and only
 * there: when the real pidfd_open fails with ENOSYS, it returns the read end of a pipe
 * that becomes readable (end of file) once the child has exited, which is all gattd asks of
 * a pidfd (ChildProcess watches it for readable, then reaps the child with waitpid). A
 * thread per child waits for the exit without reaping it (waitid WNOWAIT) and closes the
 * write end. Its instructions are in the callgrind totals of both runs of a pair and
 * cancel out. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

struct watch {
    pid_t pid;
    int fd;
};

static void *wait_exit(void *argument)
{
    struct watch *w = argument;
    siginfo_t info;
    while (waitid(P_PID, (id_t)w->pid, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR)
        ;
    close(w->fd);
    return NULL;
}

int pidfd_open(pid_t pid, unsigned int flags)
{
    static int (*real)(pid_t, unsigned int);
    if (!real)
        real = (int (*)(pid_t, unsigned int))dlsym(RTLD_NEXT, "pidfd_open");
    int fd = real ? real(pid, flags) : (errno = ENOSYS, -1);
    if (fd >= 0 || errno != ENOSYS)
        return fd;
    int ends[2];
    if (pipe2(ends, O_CLOEXEC) < 0)
        return -1;
    static struct watch watches[1024];
    static int used;
    struct watch *w = &watches[used++ % 1024];
    w->pid = pid;
    w->fd = ends[1];
    pthread_t thread;
    if (pthread_create(&thread, NULL, wait_exit, w) != 0) {
        close(ends[0]);
        close(ends[1]);
        errno = ENOSYS;
        return -1;
    }
    pthread_detach(thread);
    return ends[0];
}
