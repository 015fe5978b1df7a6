// SPDX-License-Identifier: MIT
// Linux-only event APIs that Swift's Glibc module does not export (epoll, eventfd,
// signalfd, pidfd). Headers only; no code. Used by Mainloop and DaemonCore (child processes).
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
#endif
