"""A session's kernel across its calls: adopted, stopped between calls, replaced.

The first Python call of a session adopts the oldest spare; the kernel then keeps the
session's state. Without the background policy nothing of the session runs between
calls: after a call the sweep kills what the call left (not in its snapshot) and leaves
the kernel stopped (SIGSTOP) until its next Python call. A kernel that dies is replaced
(files kept, Python state fresh). Airlock's own programs (tools) run beside it in a
fresh spare while every process of the session is stopped. See PROTOCOL.md "session".
"""

import signal

import airlock_cleanup as cleanup
import airlock_proc as proc


class Session:
    """The session's kernel and what the controller knows about it."""

    def __init__(self, kernels, reap):
        self.kernels = kernels
        self.reap = reap  # collect the controller's exited children
        self.kernel = None
        self.lost = False  # its kernel died between calls: the next call says kernel_restarted
        self.stopped = False  # stopped between calls (no background policy)
        self.count = 0  # execution count: Python and shell calls since its kernel started
        self.quick = False  # the last sweep found nothing to kill without its /proc scan

    def live(self):
        """The session's kernel while it is alive, else None (a death is remembered)."""
        k = self.kernel
        if k is not None and k.dead is not None:
            self.kernel, self.lost, self.stopped = None, True, False
        return self.kernel

    def pid(self):
        """The live kernel's pid, or None."""
        k = self.live()
        return k.pid if k is not None else None

    def kernel_for_call(self):
        """The kernel a Python call runs in, adopting a spare if there is none; with
        whether it replaces one that died since the last call."""
        k = self.kernel_for_question()
        restarted, self.lost = self.lost, False
        if restarted:
            self.count = 0
        return k, restarted

    def kernel_for_question(self):
        """The kernel an introspection asks, adopting a spare if there is none (as the
        session's first call would); a death since the last call stays for the next call
        to report."""
        if self.live() is None:
            self.kernel = self.kernels.take_spare()
        self.kernels.wait_pid(self.kernel)
        return self.kernel

    def processes(self):
        """pid -> start time of the processes before the session's code runs again: what
        the sweep after the call may keep (it keeps the controller's own and the kernel
        anyway). Read from /proc unless the last sweep found nothing but those (quick) and
        the kernel has stayed stopped since: then nothing of the owner's has run and no
        other process can exist, so there is nothing more to keep and the scan of every
        process is skipped."""
        if self.quick and self.stopped and self.live() is not None:
            return {}
        return proc.starts()

    def resume(self):
        """Let the kernel run again (it is stopped between calls without background)."""
        k = self.live()
        if self.stopped and k is not None and k.pid is not None:
            self.kernels.signal(k, signal.SIGCONT, group=False)
        self.stopped = False

    def freeze_for(self, k):
        """Before Airlock's own program (a file or SQL tool) runs in kernel k beside the
        session: stop every process of the session, so nothing changes a path between the
        program's check and its use; only the zygote, the spares and k run. Returns what
        was stopped (pid -> start time), which the sweep after the tool keeps."""
        self.kernels.wait_forks()
        cleanup.stop_all()
        keep_running = self.kernels.protected(also=[self.live()]) - {self.pid()}
        cleanup.resume(keep_running | {k.pid})
        return proc.starts()

    def sweep(self, snapshot, run_kernel, dead=()):
        """After a call (or an introspection): kill what it left running (not in snapshot,
        pid -> start time, taken before it ran), keep the kernel, stopped unless run_kernel
        (the background policy, or it ran before a tool). dead lists pids already killed
        (a tool's kernel). Returns how many processes were killed."""
        sk = self.pid()
        keep = dict(snapshot)
        for p in dead:
            keep.pop(p, None)
        protected = self.kernels.protected(also=[self.live()])
        for p in protected:
            keep[p] = None
        thaw = set(keep) - {sk}
        if run_kernel and sk is not None:
            thaw.add(sk)
        self.kernels.wait_forks()
        if not run_kernel and not dead and sk is not None and self.quiet(sk):
            # Nothing but the controller, the zygote, the spares and the stopped kernel:
            # no /proc scan of each process nor wait; the kept ones run again.
            cleanup.resume(protected - {sk})
            self.stopped = self.quick = True
            return 0
        self.quick = False
        n = cleanup.sweep(keep, thaw, dead, self.reap)
        self.stopped = sk is not None and not run_kernel
        return n

    def quiet(self, sk):
        """After a call that may leave nothing running: stop every process (the kernel
        stays stopped either way; the sweep, if needed, stops them again), then whether
        /proc holds nothing else but the controller, the zygote and the spares
        (cleanup.only)."""
        cleanup.stop_all()
        k = self.kernel
        return cleanup.only(lambda: self.kernels.protected() - {sk}, sk, k.pidfd)

    def replace(self):
        """A fresh kernel for the session (its kernel died in a call)."""
        self.kernel = self.kernels.fork()
        self.lost, self.stopped, self.count = False, False, 0

    def restart(self, ended_call):
        """The restart op: kill the kernel and fork a fresh one (files kept). After a
        restart that ended a call, the kernel that call's end forked is already fresh."""
        k = self.live()
        if not (ended_call and k is not None and k.count == 0):
            if k is not None:
                self.kernels.kill(k)
            self.kernel = self.kernels.fork()
        self.lost, self.stopped, self.count = False, False, 0
        self.kernels.wait_pid(self.kernel)
