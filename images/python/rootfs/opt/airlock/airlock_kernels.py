"""Kernel choice: the zygote, the kernels it forks and the spares kept ready.

The zygote (zygote.py) is a preloaded interpreter the controller starts; it forks a
kernel on request and reports every kernel's exit. The controller keeps AIRLOCK_SPARES
spare kernels forked ahead of the calls that will take them. Until a spare takes its
own call it is not dumpable and blocks every signal (zygote.py, kernel.Kernel.arm), so
a call running meanwhile, of the same uid, cannot ptrace it, read or write its /proc
files or signal it; SIGKILL only costs a refork, SIGSTOP is undone by the SIGCONT it
gets when taken. See PROTOCOL.md "Processes".
"""

import collections
import os
import selectors
import signal
import subprocess
import sys

import airlock_cleanup as cleanup
import airlock_proc as proc
import airlock_wire as wire
from airlock_loop import now

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SPARES = 2
EXIT_REPORT_WAIT_S = 0.2  # after a kernel's channel breaks, how long its exit report may take
RETIRED_WAIT_S = 2.0  # how long the next call waits for a retired kernel's exit report


def spares_wanted():
    """How many spare kernels to keep: AIRLOCK_SPARES (1-4), else DEFAULT_SPARES."""
    try:
        n = int(os.environ.get("AIRLOCK_SPARES") or DEFAULT_SPARES)
    except ValueError:
        n = DEFAULT_SPARES
    return min(4, max(1, n))


class Kernel:
    """The controller's view of one forked kernel, or of a shell call's bash (direct)."""

    def __init__(self, tag):
        self.tag = tag
        self.pid = None
        self.sock = None
        self.reader = None
        self.dead = None  # None while alive, else a description dict
        self.count = 0  # calls sent to it
        self.cpu_s = None  # user+system seconds of it and its waited-for children, from its exit report
        self.ready = False  # it said it finished setting itself up (before any user code ran)
        self.armed = False  # sent the "arm" op: armed for user code, never for Airlock's own program
        self.direct = None  # a shell call's bash, spawned by the controller: its Popen
        # A pidfd of the kernel, opened when the zygote reported its fork (and its parent
        # checked then): it tells whether that very process has exited, whatever has its
        # pid now, without reading /proc.
        self.pidfd = None


class Kernels:
    """The zygote and its kernels: forks, spares, signals, deaths."""

    def __init__(self, loop, on_message, while_booting=lambda: None):
        self.loop = loop
        self.on_message = on_message  # on_message(kernel, msg): what a kernel said
        self.while_booting = while_booting  # runs while the zygote preloads
        self.nspares = spares_wanted()
        self.zygote = None
        self.zsock = None
        self.zreader = None
        self.zygote_pid = None
        self.zygote_ready = False
        self.tags = 0
        self.forking = {}  # tag -> Kernel
        self.by_pid = {}
        self.spares = collections.deque()
        self.eof_pending = {}  # Kernel -> time to give up waiting for its exit report
        # Kernels killed after their one-shot call whose exit the next call waits for.
        self.retired = []
        loop.tickers.append(self)

    # --- the zygote -----------------------------------------------------------------
    def start_zygote(self):
        """Start the zygote and wait until it has preloaded."""
        ours, theirs = wire.pair()
        self.zygote = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "zygote.py"), str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=2, start_new_session=True, env=dict(os.environ), cwd="/")
        theirs.close()
        self.zygote_pid = self.zygote.pid
        self.zsock = ours
        ours.settimeout(10)
        self.zreader = wire.Reader(ours)
        self.loop.watch(ours.fileno(), selectors.EVENT_READ, self._on_zygote)
        self.while_booting()
        while not self.zygote_ready:
            self.loop.poll(1.0)

    def zygote_died(self):
        """The zygote is gone: its kernels can no longer be watched, so end them all (and
        every other process) and start a new one."""
        if self.zsock is None:
            return
        self.loop.unwatch(self.zsock.fileno())
        self.zsock.close()
        self.zsock = None
        self.zygote_ready = False
        for k in list(self.by_pid.values()) + list(self.forking.values()):
            self.kill(k, {"message": "the zygote died"})
            cleanup.close_pidfd(k)
        self.forking.clear()
        cleanup.kill_everything()
        self.start_zygote()

    def _on_zygote(self, _fd):
        if not self.zreader.fill():
            self.zygote_died()
            return
        while True:
            try:
                msg = self.zreader.next()
            except ValueError:
                self.zygote_died()
                return
            if msg is None:
                return
            t = msg.get("t")
            if t == "ready":
                self.zygote_ready = True
            elif t == "forked":
                self._forked(msg)
            elif t == "exit":
                self._exited(msg)

    def _forked(self, msg):
        k = self.forking.pop(msg.get("tag"), None)
        if k is None:
            return
        if not isinstance(msg.get("pid"), int):
            self.gone(k, {"message": "the kernel could not be started (%s)" % msg.get("error"),
                          "exit_code": 137, "fork_failed": True})
            return
        k.pid = msg.get("pid")
        self.by_pid[k.pid] = k
        k.pidfd = cleanup.pidfd(k.pid)
        if k.pidfd is not None and proc.ppid(k.pid) != self.zygote_pid:
            # Gone and its pid someone else's before the pidfd was opened: never ours.
            cleanup.close_pidfd(k)
            self.gone(k, {"message": "the kernel was gone before it was seen", "exit_code": 137, "retired": True})
        if k.dead is not None:
            self.signal(k, signal.SIGKILL)

    def _exited(self, msg):
        k = self.by_pid.pop(msg.get("pid"), None)
        if k is None:
            return
        cleanup.close_pidfd(k)
        if isinstance(msg.get("cpu_s"), (int, float)):
            k.cpu_s = float(msg["cpu_s"])
        if k.dead is None:
            sig = msg.get("signal")
            if sig:
                d = {"signal": sig, "message": "the kernel died (signal %d)" % sig, "exit_code": 128 + sig}
            else:
                c = msg.get("exit_code", 0)
                d = {"exit_code": c, "message": "the kernel exited (code %d)" % c}
            self.gone(k, d)

    # --- forks and spares -----------------------------------------------------------
    def fork(self):
        """Ask the zygote for a kernel; returns the Kernel (pid filled in later)."""
        self.tags += 1
        k = Kernel(self.tags)
        ours, theirs = wire.pair()
        try:
            wire.send(self.zsock, {"op": "fork", "tag": k.tag}, [theirs.fileno()])
        finally:
            theirs.close()
        ours.settimeout(5)
        k.sock = ours
        k.reader = wire.Reader(ours)
        self.loop.watch(ours.fileno(), selectors.EVENT_READ, lambda fd, k=k: self._on_kernel(k))
        self.forking[k.tag] = k
        return k

    def wait_forks(self):
        """Wait (at most 5 s) until every fork asked for has a pid."""
        end = now() + 5
        while self.forking and now() < end:
            self.loop.poll(0.05)

    def wait_pid(self, k):
        """Wait until k has a pid (or is dead)."""
        while k.pid is None and k.dead is None:
            self.loop.poll(0.05)

    def refill(self):
        """Fork spares until there are nspares (forking ones included)."""
        while len(self.spares) < self.nspares and self.zsock is not None:
            self.spares.append(self.fork())

    def take_spare(self, tool=False):
        """The oldest live spare, woken (SIGCONT: code of an earlier call may have stopped
        it); forks one only if there is none, and returns it dead if that fork failed (the
        call then says why). The refill comes after the call. Airlock's own program (tool)
        never takes a spare armed for user code (prearm): another spare, else a fork."""
        while True:
            while self.spares and self.spares[0].dead is not None:
                self.spares.popleft()
            if not self.spares and self.zsock is not None:
                k = self.fork()
                self.spares.append(k)
                self.wait_pid(k)
                if k.dead is not None:
                    return k
            if tool and self.spares and self.spares[0].armed:
                other = next((s for s in self.spares if not s.armed and s.dead is None), None)
                if other is None:
                    self.kill(self.spares[0], {"message": "armed for user code", "exit_code": 137, "retired": True})
                else:
                    self.spares.remove(other)
                    self.spares.appendleft(other)
                continue
            if self.spares and self.spares[0].pid is not None:
                k = self.spares.popleft()
                if not proc.stays_alive(k.pid, self.zygote_pid):
                    # Killed by an earlier call's code (its exit report not read yet).
                    self.kill(k, {"message": "the spare was killed", "exit_code": 137, "retired": True})
                    continue
                self.signal(k, signal.SIGCONT)
                return k
            self.loop.poll(0.05)

    def prearm(self):
        """Send the spare the next call takes the "arm" op: it arms for user code while
        idle, off that call's path (its first exec then finds it armed). Only at boot,
        before any call, or right after a one-shot call's teardown and cleanup, when
        nothing of that call runs any more: from then on the spare is dumpable with its
        signals unblocked, and the only code that may run beside it before it takes the
        call is Airlock's."""
        k = self.spares[0] if self.spares else None
        if k is None or k.armed or k.dead is not None or k.sock is None or k.count:
            return
        try:
            wire.send(k.sock, {"op": "arm"})
            k.armed = True
        except OSError:
            self.kill(k, {"message": "the spare did not take the arm op", "exit_code": 137, "retired": True})

    def retire_armed(self):
        """Before user code runs beside the spares (a shell call's bash): kill every spare
        armed for user code, which that code could otherwise ptrace and so reach the call
        that takes it. A killed spare never runs again; the refill replaces it. Its memory
        (environ, mem) stays readable until its exit has torn its address space down, so
        the shell starts once each has exited (at most cleanup.EXIT_WAIT_S)."""
        armed = [k for k in self.spares if k.armed]
        for k in armed:
            self.kill(k, {"message": "a shell call ran beside it", "exit_code": 137, "retired": True})
        if armed:
            cleanup.wait_exited([k.pid for k in armed if k.pid is not None])

    def wait_retired(self, limit_s=RETIRED_WAIT_S):
        """Wait (at most limit_s) until the zygote has reported the exit of every kernel
        retired after a one-shot call (it reaped it), then forget them. Until then the
        killed kernel may still be tearing down its address space: its /proc entry (an
        empty command line) and its own children, not yet handed to the controller to
        reap, would be visible to the next call, and a thread of it may still finish a
        system call (a file made). The done frame does not wait for this; the cleanup of
        the files after it does."""
        end = now() + limit_s
        while self.retired and now() < end:
            self.retired = [k for k in self.retired
                            if k.pid is not None and self.by_pid.get(k.pid) is k and self.zsock is not None]
            if self.retired:
                self.loop.poll(min(0.01, max(0.0, end - now())))
        self.retired = []

    def wait_ready(self, k, limit_s=2.0):
        """Let a kernel that has run nothing yet finish setting itself up (copy-on-write
        faults of the preloaded heap), so a call's CPU count holds only the call. Bounded:
        a kernel that never says so still runs."""
        end = now() + limit_s
        while not k.ready and k.dead is None and k.count == 0 and now() < end:
            self.loop.poll(min(0.05, max(0.0, end - now())))

    def protected(self, also=()):
        """The pids a cleanup must not kill: the controller, the zygote and the kernels
        still to be used (the spares and those in also). A kernel's pid counts only while
        its pidfd says that process has not exited: if code killed a spare and a process
        of its own got the pid before the zygote's exit report came, that process is not
        spared. (No /proc read: one right after a kernel was killed waits for its exit.)"""
        keep = {os.getpid(), 1, os.getppid(), self.zygote_pid}
        for k in list(self.spares) + [k for k in also if k is not None]:
            if k.pid is None or k.dead is not None:
                continue
            if cleanup.running(k.pidfd) if k.pidfd is not None else proc.ppid(k.pid) == self.zygote_pid:
                keep.add(k.pid)  # without pidfds (a kernel before 5.3): while the zygote is its parent
        keep.discard(None)
        return keep

    # --- signals and deaths ---------------------------------------------------------
    def signal(self, k, sig, group=True):
        """Signal a kernel's process group (it leads its own session), else the kernel."""
        if k.pid is None:
            return
        try:
            if not group:
                raise OSError
            os.killpg(k.pid, sig)
        except OSError:
            try:
                os.kill(k.pid, sig)
            except OSError:
                pass

    def kill(self, k, dead=None):
        """SIGKILL a kernel's group; it is dead from now on (dead says why)."""
        if k.dead is None:
            self.gone(k, dead or {"message": "the kernel was killed", "exit_code": 137, "killed": True})
        self.signal(k, signal.SIGKILL)

    def gone(self, k, d):
        """Record that a kernel is gone: close its channel, drop it from the spares."""
        k.dead = d
        if k.sock is not None:
            self.loop.unwatch(k.sock.fileno())
            k.sock.close()
            k.sock = None
        if k in self.spares:
            self.spares.remove(k)

    def _on_kernel(self, k):
        ok = k.reader.fill()
        while ok:
            try:
                msg = k.reader.next()
            except ValueError:
                ok = False
                break
            if msg is None:
                break
            if msg.get("t") == "ready" and k.count == 0:
                k.ready = True  # only a kernel that has run no call yet can say this
                continue
            self.on_message(k, msg)
        for fd in k.reader.take_fds(64):
            os.close(fd)
        if not ok and k.sock is not None:
            # The control socket broke. Usually the kernel died and the zygote's exit
            # report (with the signal) follows at once; give it a moment, then kill.
            self.loop.unwatch(k.sock.fileno())
            k.sock.close()
            k.sock = None
            self.eof_pending[k] = now() + EXIT_REPORT_WAIT_S

    def prepare(self):
        """Loop ticker: when the first awaited exit report is due."""
        return min(self.eof_pending.values()) if self.eof_pending else None

    def tick(self):
        """Loop ticker: kill a kernel whose exit report did not come in time."""
        for k, until in list(self.eof_pending.items()):
            if k.dead is not None:
                del self.eof_pending[k]
            elif now() >= until:
                del self.eof_pending[k]
                self.kill(k, {"message": "the kernel closed its control channel", "exit_code": 137})
