"""The controller's scheduler time slice (AIRLOCK_SCHED_SLICE_US; sandbox Config.SchedSlice).

A latency hint to Linux's fair scheduler (EEVDF, kernel 6.12+; older kernels accept and
ignore it): a short requested slice gives a woken thread an earlier virtual deadline, so
the controller, woken by a request on its link or by its kernel's answer, preempts other
work on a busy core at once instead of waiting out the running thread's slice. Its CPU
share (weight, nice) is unchanged and no privilege is needed. Set first thing in the
controller, it is inherited by every process it forks (the zygote and the kernels).
"""

import ctypes
import os
import platform
import struct

# sched_setattr(2) by architecture.
_SYS_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}
MIN_US, MAX_US = 100, 100000  # the kernel's clamp


def request_slice(value):
    """Ask for a slice of value microseconds (a string from the environment) for this
    process, keeping its policy (normal) and nice; whether the kernel took the request.
    Nothing is asked for an empty, zero or malformed value."""
    try:
        us = int(value or 0)
    except ValueError:
        return False
    nr = _SYS_SCHED_SETATTR.get(platform.machine())
    if us <= 0 or nr is None:
        return False
    us = min(max(us, MIN_US), MAX_US)
    # struct sched_attr (VER0, 48 bytes): size, policy, flags, nice, priority, runtime,
    # deadline, period. Policy 0 is SCHED_NORMAL, the controller's.
    attr = ctypes.create_string_buffer(struct.pack("=IIQiIQQQ", 48, 0, 0, os.getpriority(os.PRIO_PROCESS, 0),
                                                   0, us * 1000, 0, 0))
    try:
        return ctypes.CDLL(None, use_errno=True).syscall(nr, 0, attr, 0) == 0
    except (OSError, AttributeError):
        return False
