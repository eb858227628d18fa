"""What the controller reads about processes and the container: /proc and the cgroup.

The one parser of /proc/<pid>/stat (stat_fields; the fields after the command name,
which may itself hold spaces and parentheses), /proc/<pid>/status and /proc/<pid>/schedstat,
and the cgroup counters (v1 and v2). The kernel keeps these numbers: user code cannot
change them. Every reader returns None when the process or file is gone.
Files are read with raw syscalls, their paths resolved from a kept descriptor of /proc
or the cgroup folder (airlock_paths): a call reads a few dozen of them.
"""

import os
import signal

import airlock_paths as paths

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PF_EXITING = 0x4  # stat flags: the process is exiting
# Indexes into stat_fields (man proc: field number - 3).
STATE, PPID, FLAGS, UTIME, STIME, CUTIME, CSTIME, START = 0, 1, 6, 11, 12, 13, 14, 19


def read_bytes(path):
    """The whole of a small file (a /proc or cgroup file). Raises OSError."""
    fd = paths.open(path, os.O_RDONLY)
    try:
        chunks = []
        while True:
            b = os.read(fd, 65536)
            if not b:
                return b"".join(chunks)
            chunks.append(b)
    finally:
        os.close(fd)


def read_int(path, key=None):
    """The first integer of a file, or the value of the "key value" line named key."""
    try:
        s = read_bytes(path)
        if key is None:
            return int(s.split()[0])
        k = key.encode() + b" "
        for line in s.splitlines():
            if line.startswith(k):
                return int(line[len(k):])
    except (OSError, ValueError, IndexError):
        pass
    return None


def pids():
    """Every pid in /proc."""
    return [int(n) for n in paths.listdir("/proc") if n.isdigit()]


def stat_fields(pid):
    """The fields of /proc/<pid>/stat after the command name (state, ppid, ...), or None."""
    try:
        s = read_bytes("/proc/%d/stat" % pid)
        return s[s.rindex(b")") + 2:].split()
    except (OSError, ValueError):
        return None


def info(pid):
    """(state letter, ppid, start time in clock ticks) of a process, or None."""
    f = stat_fields(pid)
    try:
        return f[STATE].decode(), int(f[PPID]), int(f[START])
    except (TypeError, ValueError, IndexError):
        return None


def ppid(pid):
    """The parent pid of a process, or None."""
    i = info(pid)
    return i[1] if i else None


def table(skip=()):
    """pid -> (state, ppid, start) of every process in /proc but those in skip (not even
    read: /proc/<pid>/stat of a process tearing down a large address space waits for it)."""
    out = {}
    for p in pids():
        if p not in skip:
            i = info(p)
            if i is not None:
                out[p] = i
    return out


def starts():
    """pid -> start time of every process now: what a later cleanup may keep."""
    return {p: start for p, (_, _, start) in table().items()}


def cpu(pid):
    """CPU seconds of a live process: (own, own + waited-for children), or None.
    Clock-tick resolution."""
    f = stat_fields(pid)
    try:
        ut, st, cut, cst = (int(f[i]) for i in (UTIME, STIME, CUTIME, CSTIME))
    except (TypeError, ValueError, IndexError):
        return None
    return (ut + st) / CLK_TCK, (ut + st + cut + cst) / CLK_TCK


def thread_cpu(pid):
    """CPU seconds (ns resolution) of a process's main thread from /proc/<pid>/schedstat,
    else from /proc/<pid>/stat, or None."""
    try:
        return int(read_bytes("/proc/%d/schedstat" % pid).split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        c = cpu(pid)
        return c[0] if c else None


def run_delay(pid):
    """Seconds a process's main thread has spent runnable but waiting for a CPU (other work
    on the core, or the container's CPU quota used up), from /proc/<pid>/schedstat, or
    None."""
    try:
        return int(read_bytes("/proc/%d/schedstat" % pid).split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def stopped(pid):
    """Whether every thread of a live process is stopped (state T or t in
    /proc/<pid>/task/<tid>/stat): each has left any system call it was in, and none runs
    again before a SIGCONT or SIGKILL. False if one is not stopped (yet) or it is gone."""
    try:
        tids = [t for t in paths.listdir("/proc/%d/task" % pid) if t.isdigit()]
        for t in tids:
            s = read_bytes("/proc/%d/task/%s/stat" % (pid, t))
            if s[s.rindex(b")") + 2:][:1] not in (b"T", b"t"):
                return False
    except (OSError, ValueError):
        return False
    return bool(tids)


def stays_alive(pid, parent):
    """Whether a process is alive and will stay so: parent's child, not a zombie, not
    exiting (PF_EXITING) and no SIGKILL pending (/proc/<pid>/status)."""
    f = stat_fields(pid)
    if not f:
        return False
    try:
        status = dict(line.split(b":", 1) for line in read_bytes("/proc/%d/status" % pid).splitlines() if b":" in line)
        pending = int(status[b"SigPnd"].strip(), 16) | int(status[b"ShdPnd"].strip(), 16)
        return (f[STATE] not in (b"Z", b"X") and int(f[PPID]) == parent
                and not int(f[FLAGS]) & PF_EXITING and not pending & (1 << (signal.SIGKILL - 1)))
    except (OSError, ValueError, IndexError, KeyError):
        return False


# Where each cgroup counter is: v1 and v2 paths, (path, key, scale), tried in order; the
# first that reads is remembered (a failed open costs as much as a read).
_CGROUP = {
    "cpu": (("/sys/fs/cgroup/cpuacct/cpuacct.usage", None, 1e-9),
            ("/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", None, 1e-9),
            ("/sys/fs/cgroup/cpu.stat", "usage_usec", 1e-6)),
    "memory": (("/sys/fs/cgroup/memory/memory.usage_in_bytes", None, 1),
               ("/sys/fs/cgroup/memory.current", None, 1)),
    "oom_kills": (("/sys/fs/cgroup/memory.events", "oom_kill", 1),
                  ("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill", 1)),
}
_found = {}


def _cgroup(name):
    known = _found.get(name)
    for path, key, scale in ((known,) if known else _CGROUP[name]):
        v = read_int(path, key)
        if v is not None:
            _found[name] = (path, key, scale)
            return v * scale
    return None


def cgroup_cpu():
    """CPU seconds of the whole container (its cgroup; ns resolution), or None."""
    return _cgroup("cpu")


def cgroup_memory():
    """Memory bytes the container uses now, or None."""
    return _cgroup("memory")


def oom_kills():
    """How many processes the OOM killer took in the container's cgroup so far."""
    return _cgroup("oom_kills") or 0
