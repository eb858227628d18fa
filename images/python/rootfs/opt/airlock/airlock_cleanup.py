"""Cleanup between calls: the processes (the sweep), IPC objects and files a call leaves.

Every process in the container runs as the controller's uid, so the controller may
signal (and kill) all of them; which ones to keep is the caller's decision (the
controller, the zygote, the spares, a session's kernel and what it may keep).
"""

import ctypes
import os
import select
import signal
import time

import airlock_files as files
import airlock_paths as paths
import airlock_proc as proc

IPC_RMID = 0
SWEEP_LIMIT_S = 5.0  # a sweep gives up rescanning after this long (it never needs to)
EXIT_WAIT_S = 2.0  # how long a sweep waits for the processes it killed to be gone


def stop_all():
    """SIGSTOP every process the controller may signal but itself, in one pass of the
    kernel over them (kill(-1)): a process that was forking passes the stop to its child."""
    try:
        os.kill(-1, signal.SIGSTOP)
    except OSError:
        pass


def kill_everything():
    """SIGKILL every process the controller may signal but itself, in one pass (kill(-1)):
    nothing forks past it."""
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass


def resume(pids):
    """SIGCONT each of pids (not the controller, never 0 or a group)."""
    me = os.getpid()
    for p in pids:
        if p and p > 0 and p != me:
            try:
                os.kill(p, signal.SIGCONT)
            except OSError:
                pass


def sweep(keep, thaw=(), dead=(), reap=lambda: None):
    """Leave no process but those in keep: stop every process of the container at once,
    SIGKILL each one not in keep (rescanning until a pass finds none), SIGCONT the pids in
    thaw, wait until the killed ones have exited (a stopped process given SIGKILL on a
    busy machine may take a while to run its exit) and reap() the controller's zombies.
    Nothing runs between the stop and the kill, so a fork bomb cannot outpace the scan,
    and no killed pid is reused while it runs. keep maps a pid to its start time (None:
    whatever runs there); dead lists pids already SIGKILLed (a kernel just retired), not
    even looked at nor waited for. Returns how many processes it killed."""
    stop_all()
    me = os.getpid()
    killed = set(dead)
    end = time.monotonic() + SWEEP_LIMIT_S
    while True:
        victims = [p for p, (state, _, start) in proc.table(skip=killed).items()
                   if p != me and state not in "ZX" and not (p in keep and keep[p] in (None, start))]
        for p in victims:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
            killed.add(p)
        if not victims or time.monotonic() > end:
            break
    resume(thaw)
    victims = killed - set(dead)
    wait_exited(victims)
    reap()
    return len(victims)


def pidfd(pid):
    """A pidfd of pid (that process, not whatever later gets its pid), or None."""
    try:
        return os.pidfd_open(pid)
    except (OSError, AttributeError):
        return None


def close_pidfd(k):
    """Close kernel k's pidfd, if it has one."""
    if k.pidfd is not None:
        try:
            os.close(k.pidfd)
        except OSError:
            pass
        k.pidfd = None


def running(fd):
    """Whether the process of pidfd fd has not exited yet (a zombie has)."""
    if fd is None:
        return False
    p = select.poll()
    p.register(fd, select.POLLIN)
    try:
        return not p.poll(0)
    except OSError:
        return False


def only(kept, kernel, kernel_fd):
    """Whether /proc lists no process but those kept() returns (pids) and the kernel
    (kernel, its pidfd kernel_fd): then a sweep would find nothing to kill. kept() and
    the kernel's pidfd are asked after the listing, and each must vouch for a pid only
    while a pidfd says that process has not exited: then the pid was that process's
    throughout the listing, never one a process of the call's got since. The caller must
    know that none of them can start a process of the call's (the zygote forks only for
    the controller, spares run no code) and that nothing else runs: stop_all() first, so
    no process of the call's can fork (or exit after forking) while /proc is listed; a
    stop or kill that reaches a forking process reaches its child too, or the fork fails."""
    try:
        listed = proc.pids()
    except OSError:
        return False
    keep = kept()
    others = [p for p in listed if p not in keep]
    return not others or (others == [kernel] and running(kernel_fd))


def wait_exited(pids, limit_s=EXIT_WAIT_S):
    """Wait (at most limit_s) until each of pids has exited (a zombie at most), through
    pidfds: nothing of /proc is read (that would wait for an address space's teardown).
    Without pidfds (an old kernel) it returns at once. Returns how many had not exited."""
    fds = []
    try:
        for p in pids:
            try:
                fds.append(os.pidfd_open(p))
            except (OSError, AttributeError):
                pass  # gone already, or no pidfds here
        poller = select.poll()
        for fd in fds:
            poller.register(fd, select.POLLIN)
        left = set(fds)
        end = time.monotonic() + limit_s
        while left and time.monotonic() < end:
            for fd, _ in poller.poll(max(1, int((end - time.monotonic()) * 1000))):
                left.discard(fd)
                poller.unregister(fd)
        return len(left)
    finally:
        for fd in fds:
            os.close(fd)


def clear_ipc():
    """Remove every SysV IPC object of the container's IPC namespace (shared memory,
    semaphore sets, message queues; the controller's uid created them, so it may, even if
    their owner was changed). A segment still attached goes when its last process is gone.
    POSIX message queues are files in /dev/mqueue: clear_dirs removes them. The three
    listings are read first; libc is loaded only when one of them lists an object (after
    nearly every call none does)."""
    found = []
    for kind in ("shm", "sem", "msg"):
        try:
            lines = proc.read_bytes("/proc/sysvipc/" + kind).decode("ascii", "replace").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            try:
                found.append((kind, int(line.split()[1])))
            except (ValueError, IndexError):
                pass
    if not found:
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return
    rmid = {"shm": lambda i: libc.shmctl(i, IPC_RMID, None),
            "sem": lambda i: libc.semctl(i, 0, IPC_RMID),
            "msg": lambda i: libc.msgctl(i, IPC_RMID, None)}
    for kind, ident in found:
        rmid[kind](ident)



def clear_dirs(dirs):
    """Empty each folder of dirs, never following a symlink."""
    for d in dirs:
        files.clear_dir(d)


def make_dirs(dirs):
    """Make sure each folder of dirs exists."""
    for d in dirs:
        try:
            paths.makedirs(d)
        except OSError:
            pass


def read_prebuilt(src):
    """The files of folder src (read-only, from the image) as [(name, bytes)], read once
    when the controller starts: matplotlib's font cache built at image build time
    (write_prebuilt puts it back after every one-shot call without reading the image
    again)."""
    out = []
    try:
        names = sorted(os.listdir(src))
    except OSError:
        return out
    for name in names:
        try:
            with open(os.path.join(src, name), "rb") as f:
                out.append((name, f.read(8 << 20)))
        except OSError:
            continue
    return out


def write_prebuilt(prebuilt, dst):
    """Write each (name, bytes) of prebuilt (read_prebuilt) into folder dst where it is
    missing: matplotlib's font cache found in its MPLCONFIGDIR (an empty tmpfs) so that no
    kernel rebuilds it (FontManager(), seconds). A copy, not a symlink: matplotlib
    rewrites the file when it rebuilds (a font gone), and a symlink to a read-only file
    made that open fail and the import with it."""
    for name, data in prebuilt:
        try:
            fd = paths.open(os.path.join(dst, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except OSError:
            continue  # there already (a file of the session's own stays) or dst is gone
        try:
            os.write(fd, data)
        except OSError:
            pass
        finally:
            os.close(fd)
