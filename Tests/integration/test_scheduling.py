# SPDX-License-Identifier: MIT
"""gattd's scheduler slice (BENCHMARKS.md, "Fewer context switches"): at start gattd asks the
kernel for a 1 ms slice of its own (sched_setattr, honoured since Linux 6.12), keeps the nice
value and policy it was started with, leaves a process under another policy alone, and says
what came of it on its "starting" line.

The kernel's answer is read with sched_getattr(2) on gattd's pid, as an administrator's
`chrt -p` would, not from gattd's own report.
"""

import ctypes
import os
import platform

from fixtures import wait_until

SYS_SCHED_GETATTR = {"x86_64": 315, "aarch64": 275}[platform.machine()]
SCHED_IDLE = 5
SLICE_NS = 1_000_000


class SchedAttr(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("sched_policy", ctypes.c_uint32), ("sched_flags", ctypes.c_uint64),
                ("sched_nice", ctypes.c_int32), ("sched_priority", ctypes.c_uint32),
                ("sched_runtime", ctypes.c_uint64), ("sched_deadline", ctypes.c_uint64),
                ("sched_period", ctypes.c_uint64)]


def sched_getattr(pid):
    libc = ctypes.CDLL(None, use_errno=True)
    attr = SchedAttr()
    if libc.syscall(SYS_SCHED_GETATTR, pid, ctypes.byref(attr), ctypes.sizeof(attr), 0) != 0:
        raise OSError(ctypes.get_errno(), "sched_getattr")
    return attr


def kernel_has_custom_slices():
    major, minor = (int(x) for x in platform.release().split(".")[:2])
    return (major, minor) >= (6, 12)


def starting_line(g):
    line = g.child.wait_for_line("starting", 10)
    assert line is not None, "gattd printed no 'starting' line"
    return line


def test_gattd_takes_its_slice_and_keeps_the_nice_value_it_was_started_with(start_gattd, standin):
    g = start_gattd("core.json", prefix=["nice", "-n", "5"])
    line = starting_line(g)
    pid = g.child.proc.pid
    attr = sched_getattr(pid)
    assert attr.sched_policy == os.SCHED_OTHER
    assert os.getpriority(os.PRIO_PROCESS, pid) == 5, "the slice request changed gattd's nice value"
    assert attr.sched_nice == 5
    if kernel_has_custom_slices():
        assert attr.sched_runtime == SLICE_NS, "kernel reports a slice of %d ns" % attr.sched_runtime
        assert "sched.slice=1000us" in line, line
    else:
        assert 'sched.slice="kernel default (custom slices need Linux 6.12)"' in line, line
    # and it serves as usual
    wait_until(lambda: len(standin.call("Applications")) == 2, 10, "the applications registered (core.json: 2)")


def test_the_slice_is_asked_for_whatever_the_log_level(start_gattd, standin):
    """The "starting" line is not printed at --log-level warning; the request still happens."""
    g = start_gattd("core.json", args=["--log-level", "warning"])
    wait_until(lambda: len(standin.call("Applications")) == 2, 10, "the applications registered (core.json: 2)")
    attr = sched_getattr(g.child.proc.pid)
    if kernel_has_custom_slices():
        assert attr.sched_runtime == SLICE_NS, "kernel reports a slice of %d ns" % attr.sched_runtime
    assert not any("starting" in line for line in g.child.out.lines)


def test_a_gattd_under_another_policy_is_left_alone(start_gattd, standin):
    g = start_gattd("core.json", prefix=["chrt", "--idle", "0"])
    line = starting_line(g)
    attr = sched_getattr(g.child.proc.pid)
    assert attr.sched_policy == SCHED_IDLE
    assert 'sched.slice="kernel default (scheduling policy 5)"' in line, line
    if kernel_has_custom_slices():
        assert attr.sched_runtime != SLICE_NS, "gattd changed the slice of a SCHED_IDLE process"
    wait_until(lambda: len(standin.call("Applications")) == 2, 10, "the applications registered (core.json: 2)")
