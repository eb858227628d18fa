"""Shell calls: a bash the controller spawns and reaps itself, never a kernel's child.

One-shot or in a session, a shell call's exit status is what the controller observes
(wait4 of its own child), so nothing a session's code did to its kernel can change it.
The spares (and a session's kernel) wait through it as through a Python call.
"""

import os
import signal
import subprocess

from airlock_kernels import Kernel
from airlock_loop import now

WORK = os.environ.get("AIRLOCK_WORK", "/work")


class OomScore:
    """The controller's own /proc/self/oom_score_adj, opened while it was still dumpable
    (afterwards /proc/self is root's), so it can raise its score around a spawn."""

    def __init__(self):
        self.fd = None
        self.own = b"0"
        try:
            self.fd = os.open("/proc/self/oom_score_adj", os.O_RDWR | os.O_CLOEXEC)
            self.own = os.pread(self.fd, 16, 0).strip() or b"0"
        except OSError:
            self.fd = None

    def set(self, value):
        """Set it (raising is always allowed; back down to the value it started with is
        allowed too, that being at or above its floor)."""
        if self.fd is not None:
            try:
                os.pwrite(self.fd, value, 0)
            except OSError:
                pass


class Shells:
    """The shell calls' bash processes, by pid, until they are reaped."""

    def __init__(self, oom, call_of):
        self.oom = oom
        self.call_of = call_of  # call_of(kernel): the running call of that kernel, or None
        self.running = {}  # pid -> Kernel (the stand-in of a shell call)

    def stand_in(self):
        """The stand-in Kernel of a shell call."""
        k = Kernel(0)
        k.ready = True
        return k

    def spawn(self, k, code, env, fds):
        """Run /bin/bash -c CODE as the controller's own child: in a new session (its process
        group is what timeouts and interrupts signal), with the call's pipes on 1/2 (and 0),
        none of the controller's fds (all CLOEXEC, close_fds), the environment a kernel would
        give it (the container's plus the call's), cwd /work. SIGINT is default in it
        because the controller handles SIGINT rather than ignoring it (an ignored signal
        stays ignored across exec). No preexec_fn: it costs a full fork (~15 ms here) where
        Popen otherwise uses vfork. The shell inherits oom_score_adj 1000, as a kernel sets
        for itself, so the OOM killer picks the call, not the controller: the controller
        raises its own for the spawn and puts it back (the child's /proc entry cannot be
        written: it stays non-dumpable, so not ours, until well into its exec; a wrapper
        that writes its own costs an exec through the container's fuse-overlayfs)."""
        full = dict(os.environ)
        full.update({str(a): str(b) for a, b in env.items()})
        cwd = WORK if os.path.isdir(WORK) else "/tmp"
        try:
            self.oom.set(b"1000")
            p = subprocess.Popen(["/bin/bash", "-c", code], stdin=fds[2] if len(fds) > 2 else subprocess.DEVNULL,
                                 stdout=fds[0], stderr=fds[1], cwd=cwd, env=full, close_fds=True,
                                 start_new_session=True)
        except OSError as exc:
            k.dead = {"message": "the shell could not be started: %s" % exc, "exit_code": 127}
            return
        finally:
            self.oom.set(self.oom.own)
        k.pid, k.direct = p.pid, p
        p.returncode = 0  # reaped by the controller, never by Popen (its __del__ must not wait)
        self.running[p.pid] = k

    def reaped(self, pid, status, ru):
        """The controller reaped pid: if it was a shell call's bash, its status is the call's
        answer. Returns whether it was."""
        k = self.running.pop(pid, None)
        if k is None:
            return False
        k.cpu_s = ru.ru_utime + ru.ru_stime
        call = self.call_of(k)
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            # "interrupted" only when Airlock interrupted it: code may SIGINT itself.
            by_us = call is not None and call.int_sent
            res = {"status": "interrupted" if sig == signal.SIGINT and by_us else "error", "exit_code": 128 + sig}
        else:
            rc = os.WEXITSTATUS(status)
            res = {"status": "ok" if rc == 0 else "error", "exit_code": rc}
        if call is not None and call.kdone is None and k.dead is None:
            call.kdone = dict(res, t="done", error=None, execution_count=1)
            call.end = now()
        if k.dead is None:
            k.dead = {"message": "done", "exit_code": res["exit_code"], "retired": True}
        return True
