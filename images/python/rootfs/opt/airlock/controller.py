"""Airlock's in-container controller: the container's main process, pid 1 (see PROTOCOL.md).

It speaks newline-delimited JSON with Airlock on its own stdin/stdout, starts the
zygote (which forks kernels), runs every call in a kernel with fresh per-call pipes,
and builds each reply from what it observes itself: output read from those pipes up
to EOF, exit and death of the kernel, the deadline, the output cap, and artifacts
read from /work. User code never runs in this process and cannot reach its fds
(PR_SET_DUMPABLE 0, CLOEXEC, nothing inherited).
"""

import base64
import codecs
import collections
import ctypes
import fcntl
import hashlib
import json
import mimetypes
import os
import selectors
import signal
import socket
import subprocess
import sys
import time

import airlock_files as files
import airlock_kernelops as kernelops
import airlock_wire as wire

WORK = os.environ.get("AIRLOCK_WORK", "/work")
# /workspace is the controller's own tmpfs (Airlock mounted no input folder there): a
# call's archive is unpacked into it, and it is emptied after every one-shot call.
WORKSPACE = "/workspace"
WORKSPACE_OWNED = os.environ.get("AIRLOCK_WORKSPACE") == "tmpfs"
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
HERE = os.path.dirname(os.path.abspath(__file__))
PR_SET_DUMPABLE = 4
IMAGE_EXTS = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp")
INT_WINDOW_S = 0.5  # see Call.int_repeat_until
EOF_GRACE_S = 0.3
SESSION_KILL_GRACE_S = 0.5
OUT_HIGH = 4 << 20  # stop reading kernel pipes while this much is unsent to Airlock
OUT_LOW = 1 << 20
MAX_WARNINGS = 20
F_SETPIPE_SZ = 1031
COALESCE_S = 0.004  # live output is sent at most this late ...
COALESCE_BYTES = 32 << 10  # ... or once this much is pending
CLEAN_DIRS = (WORK, "/tmp", "/dev/shm")
TRACE = os.environ.get("AIRLOCK_TRACE") == "1"  # done frames carry "trace": {phase: ms}
# Spare kernels kept ready for one-shot calls (AIRLOCK_SPARES, 1-4): with two, a call sent
# right after the previous one finds the second ready while the first is replaced.
DEFAULT_SPARES = 2
PF_EXITING = 0x4  # /proc/<pid>/stat flags: the process is exiting
# The controller's own /proc/self/oom_score_adj, opened before it made itself
# non-dumpable, and its value then (see spawn_shell).
OOM_FD = None
OOM_OWN = b"0"


def now():
    return time.monotonic()


def _read_int_file(path, key=None):
    try:
        with open(path) as f:
            if key is None:
                return int(f.read().split()[0])
            for line in f:
                k, _, v = line.partition(" ")
                if k == key:
                    return int(v)
    except (OSError, ValueError, IndexError):
        pass
    return None


def oom_kills():
    for path in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
        v = _read_int_file(path, "oom_kill")
        if v is not None:
            return v
    return 0


def proc_pids():
    return [int(n) for n in os.listdir("/proc") if n.isdigit()]


def proc_state(pid):
    """The state letter of a process, or "?" if it is gone."""
    f = stat_fields(pid)
    return f[0].decode() if f else "?"


def stat_fields(pid):
    """The fields of /proc/<pid>/stat after the command name (state, ppid, ...), or None."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            s = f.read()
        return s[s.rindex(b")") + 2:].split()
    except (OSError, ValueError):
        return None


def proc_ppid(pid):
    """The parent pid of a process, or None if it is gone."""
    f = stat_fields(pid)
    try:
        return int(f[1]) if f else None
    except (ValueError, IndexError):
        return None


def spares_wanted():
    """How many spare kernels to keep: AIRLOCK_SPARES (1-4), else DEFAULT_SPARES."""
    try:
        n = int(os.environ.get("AIRLOCK_SPARES") or DEFAULT_SPARES)
    except ValueError:
        n = DEFAULT_SPARES
    return min(4, max(1, n))


def live_pids():
    """pid -> state letter of every process visible in /proc."""
    out = {}
    for n in os.listdir("/proc"):
        if not n.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % n, "rb") as f:
                s = f.read()
            out[int(n)] = chr(s[s.rindex(b")") + 2])
        except (OSError, ValueError, IndexError):
            continue
    return out


def cgroup_cpu():
    """CPU seconds of the whole container (its cgroup; ns resolution), or None."""
    for p in ("/sys/fs/cgroup/cpuacct/cpuacct.usage", "/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage"):
        v = _read_int_file(p)
        if v is not None:
            return v / 1e9
    v = _read_int_file("/sys/fs/cgroup/cpu.stat", "usage_usec")
    return v / 1e6 if v is not None else None


def load_archive():
    """The unpacker, imported only where archives can come (tarfile, zipfile and gzip cost
    tens of ms to load): start_zygote loads it while the zygote preloads."""
    import airlock_archive
    return airlock_archive


def proc_cpu(pid):
    """CPU seconds of a live process from /proc/<pid>/stat: (own, own + waited-for children),
    or None. Clock-tick resolution; the kernel keeps these numbers, user code cannot."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            s = f.read()
        fields = s[s.rindex(b")") + 2:].split()
        ut, st, cut, cst = (int(x) for x in fields[11:15])
    except (OSError, ValueError, IndexError):
        return None
    return (ut + st) / CLK_TCK, (ut + st + cut + cst) / CLK_TCK


def thread_cpu(pid):
    """CPU seconds (ns resolution) of a process's main thread from /proc/<pid>/schedstat,
    else from /proc/<pid>/stat, or None."""
    try:
        with open("/proc/%d/schedstat" % pid, "rb") as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        c = proc_cpu(pid)
        return c[0] if c else None


class Kernel:
    """The controller's view of one forked kernel."""

    def __init__(self, tag):
        self.tag = tag
        self.pid = None
        self.sock = None
        self.reader = None
        self.dead = None  # None while alive, else a description dict
        self.count = 0
        self.cpu_s = None  # user+system seconds of it and its waited-for children, from its exit report
        self.ready = False  # it said it finished setting itself up (before any user code ran)
        self.direct = None  # a one-shot shell call's bash, spawned by the controller: its Popen


class Call:
    """State of the exec request being run."""

    def __init__(self, req, kernel, seq):
        self.req = req
        self.id = req.get("id")
        self.kernel = kernel
        self.seq = seq
        self.mode = req.get("mode", "oneshot")
        self.pipes = {}  # fd -> stream name
        self.decoders = {"stdout": codecs.getincrementaldecoder("utf-8")("replace"),
                         "stderr": codecs.getincrementaldecoder("utf-8")("replace")}
        self.counts = {"stdout": 0, "stderr": 0}
        self.display_bytes = 0
        self.hard = int(req.get("hard_output_bytes") or (64 << 20))
        self.stdin_data = b""
        self.stdin_fd = None
        self.kdone = None
        self.figures = []
        self.warnings = []
        self.start = now()
        self.end = None
        self.deadline = self.start + max(1, int(req.get("timeout_ms") or 30000)) / 1000.0
        self.hard_kill_at = None
        # An interrupt in the call's first INT_WINDOW_S may reach the kernel before it
        # arms its SIGINT handler (SIGINT is ignored between calls): repeat it until then.
        self.int_repeat_until = None
        self.int_next = 0.0
        self.int_sent = False  # an interrupt request reached this call
        self.verdict = None  # "timeout" | "output_limit" set by the controller
        self.message = ""
        self.eof_deadline = None
        self.snapshot = set()
        self.t_recv = req.get("_t_recv", now())
        self.marks = []
        self.registered = set()  # pipe fds in the selector
        self.nap = {}  # pipe fd -> monotonic time until which it is not read (coalescing)
        self.cpu0 = None  # the kernel's CPU seconds when the call started (see Controller.call_cpu)
        self.orphans0 = 0.0
        self.cg = None  # [container, controller, zygote] CPU seconds at the call's start ...
        self.cg_end = None  # ... and when the kernel answered or died
        self.spare0 = {}  # spare pid -> its CPU seconds at the call's start ...
        self.spare_used = 0.0  # ... and how much they used during it (a spare's set-up)
        self.unpack = None  # {"format", "entries", "bytes", "ms"} of the call's archive
        self.pend = []  # [(stream, [text])] output not yet sent, in order
        self.pend_bytes = 0
        self.pend_since = 0.0


    def mark(self, name, t=None):
        if TRACE:
            self.marks.append((name, now() if t is None else t))


class Controller:
    def __init__(self):
        self.t0 = now()
        self.max_life = float(os.environ.get("AIRLOCK_MAX_LIFE_S") or 0) or None
        # Spares live while other calls run. Until one takes its own call it is not
        # dumpable and blocks every signal (zygote.py, kernel.Kernel.arm), so a call of the
        # same uid cannot ptrace it, read or write its /proc files, or signal it; SIGKILL
        # only costs a refork, SIGSTOP is undone by the SIGCONT it gets when taken.
        self.nspares = spares_wanted()
        self.sel = selectors.DefaultSelector()
        # Keep Airlock's pipes on private CLOEXEC fds; 0 and 1 become /dev/null.
        self.infd = os.dup(0)
        self.outfd = os.dup(1)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
        os.set_blocking(self.infd, False)
        os.set_blocking(self.outfd, False)
        self.inbuf = bytearray()
        self.inscan = 0  # inbuf[:inscan] holds no newline
        self.orphan_cpu = 0.0  # CPU seconds of reaped processes that were not our children
        self.out = bytearray()
        self.out_registered = False
        self.queue = collections.deque()
        self.sel.register(self.infd, selectors.EVENT_READ, self.on_stdin)
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        self.sel.register(self.wake_r, selectors.EVENT_READ, self.on_sigchld)
        self.zygote = None
        self.zsock = None
        self.zreader = None
        self.zygote_pid = None
        self.tags = 0
        self.forking = {}  # tag -> Kernel
        self.by_pid = {}
        self.spares = collections.deque()
        self.session = None
        self.session_lost = False
        self.call = None
        self.seq = 0
        self.reported = {}  # rel path -> (mtime_ns, size) already returned or skipped
        self.paused = False
        self.eof_pending = {}  # Kernel -> time to give up waiting for its exit report
        self.direct = {}  # pid -> Kernel of a directly spawned shell (our own child)

    # --- output to Airlock ----------------------------------------------------------
    def emit(self, obj):
        self.out += json.dumps(obj, separators=(",", ":")).encode() + b"\n"
        self.flush_out()

    def flush_out(self, *_):
        while self.out:
            try:
                n = os.write(self.outfd, self.out[:1 << 20])
            except BlockingIOError:
                break
            except BrokenPipeError:
                self.shutdown(0)
            del self.out[:n]
        want = bool(self.out)
        if want != self.out_registered:
            if want:
                self.sel.register(self.outfd, selectors.EVENT_WRITE, self.flush_out)
            else:
                self.sel.unregister(self.outfd)
            self.out_registered = want
        self.update_pause()

    def update_pause(self):
        call = self.call
        if call is None:
            return
        if not self.paused and len(self.out) > OUT_HIGH:
            self.paused = True
        elif self.paused and len(self.out) < OUT_LOW:
            self.paused = False
        self.sync_pipes(call)

    def sync_pipes(self, call):
        """Watch exactly the call's pipes that are neither paused nor napping."""
        t = now()
        for fd in list(call.pipes):
            want = not self.paused and call.nap.get(fd, 0) <= t
            if want and fd not in call.registered:
                self.sel.register(fd, selectors.EVENT_READ, self.on_pipe)
                call.registered.add(fd)
            elif not want and fd in call.registered:
                self.sel.unregister(fd)
                call.registered.discard(fd)

    # --- the event loop -------------------------------------------------------------
    def poll(self, timeout):
        if self.max_life is not None:
            left = self.t0 + self.max_life - now()
            if left <= 0:
                self.shutdown(0)
            timeout = left if timeout is None else min(timeout, left)
        call = self.call
        if call is not None:
            self.sync_pipes(call)
            wakes = [t for fd, t in call.nap.items() if fd in call.pipes and fd not in call.registered]
            if call.pend_bytes:
                wakes.append(call.pend_since + COALESCE_S)
            if wakes:
                left = min(wakes) - now()
                timeout = left if timeout is None else min(timeout, left)
        if self.eof_pending:
            left = min(self.eof_pending.values()) - now()
            timeout = left if timeout is None else min(timeout, left)
        for key, mask in self.sel.select(None if timeout is None else max(0, timeout)):
            key.data(key.fd) if key.data != self.flush_out else self.flush_out()
        call = self.call
        if call is not None and call.pend_bytes and now() >= call.pend_since + COALESCE_S:
            self.flush_pending(call)
        for k, until in list(self.eof_pending.items()):
            if k.dead is not None:
                del self.eof_pending[k]
            elif now() >= until:
                del self.eof_pending[k]
                self.kill_kernel(k, {"message": "the kernel closed its control channel", "exit_code": 137})

    def on_sigchld(self, _fd):
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass
        while True:
            try:
                pid, _status, ru = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.zygote_pid:
                self.zygote_died()
            elif pid in self.direct:
                self.direct_exited(self.direct.pop(pid), _status, ru)
            else:
                # An orphan of a call (its parent died first): its time counts for that call.
                self.orphan_cpu += ru.ru_utime + ru.ru_stime

    def on_stdin(self, _fd):
        try:
            data = os.read(self.infd, 1 << 20)
        except BlockingIOError:
            return
        if not data:
            self.shutdown(0)  # Airlock is gone: dead man's switch
        self.inbuf += data
        while True:
            # A long line (an archive) arrives in many reads: scan only the new bytes.
            i = self.inbuf.find(b"\n", self.inscan)
            if i < 0:
                self.inscan = len(self.inbuf)
                break
            line = bytes(self.inbuf[:i])
            del self.inbuf[:i + 1]
            self.inscan = 0
            if line.strip():
                self.on_request(line)

    def on_request(self, line):
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ValueError("request is not an object")
        except ValueError as exc:
            self.emit({"t": "done", "id": None, "fail": "bad request: %s" % exc})
            return
        op = req.get("op")
        if op == "ping":
            self.emit({"t": "done", "id": req.get("id"), "pong": True})
        elif op == "interrupt":
            running = self.call is not None and self.call.kernel.dead is None
            if running:
                self.call.int_sent = True
                self.signal_kernel(self.call.kernel, signal.SIGINT)
                if now() - self.call.start < INT_WINDOW_S:
                    self.call.int_repeat_until = self.call.start + INT_WINDOW_S
                    self.call.int_next = now() + 0.05
            self.emit({"t": "done", "id": req.get("id"), "interrupted": running})
        elif op == "stats":
            self.emit(dict(self.stats(), t="done", id=req.get("id")))
        elif op == "input_reply":
            kernelops.input_reply(self, req)
        elif op == "restart" and self.call is not None and self.call.mode == "session":
            # Restart is allowed during a call: it ends that call (kernel killed).
            self.call.verdict = self.call.verdict or "interrupted"
            self.call.message = self.call.message or "the kernel was restarted"
            self.kill_kernel(self.call.kernel)
            req["_done_during_call"] = True
            self.queue.append(req)
        else:
            req["_t_recv"] = now()
            self.queue.append(req)

    # --- zygote and kernels ---------------------------------------------------------
    def start_zygote(self):
        ours, theirs = wire.pair()
        env = dict(os.environ)
        self.zygote = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "zygote.py"), str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=2, start_new_session=True, env=env, cwd="/")
        theirs.close()
        self.zygote_pid = self.zygote.pid
        self.zsock = ours
        ours.settimeout(10)
        self.zreader = wire.Reader(ours)
        self.sel.register(ours.fileno(), selectors.EVENT_READ, self.on_zygote)
        if WORKSPACE_OWNED:
            load_archive()  # while the zygote preloads, off every call's path
        while self.zygote_ready is False:
            self.poll(1.0)

    zygote_ready = False

    def zygote_died(self):
        if self.zsock is None:
            return
        try:
            self.sel.unregister(self.zsock.fileno())
        except (KeyError, ValueError):
            pass
        self.zsock.close()
        self.zsock = None
        self.zygote_ready = False
        # Its kernels can no longer be watched: end them all.
        for k in list(self.by_pid.values()) + list(self.forking.values()):
            self.kill_kernel(k, {"message": "the zygote died"})
        self.forking.clear()
        self.kill_all()
        self.start_zygote()

    def on_zygote(self, _fd):
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
                k = self.forking.pop(msg.get("tag"), None)
                if k is not None:
                    k.pid = msg.get("pid")
                    self.by_pid[k.pid] = k
                    if k.dead is not None:
                        self.signal_kernel(k, signal.SIGKILL)
            elif t == "exit":
                k = self.by_pid.pop(msg.get("pid"), None)
                if k is not None and isinstance(msg.get("cpu_s"), (int, float)):
                    k.cpu_s = float(msg["cpu_s"])
                if k is not None and k.dead is None:
                    sig = msg.get("signal")
                    if sig:
                        d = {"signal": sig, "message": "the kernel died (signal %d)" % sig, "exit_code": 128 + sig}
                    else:
                        c = msg.get("exit_code", 0)
                        d = {"exit_code": c, "message": "the kernel exited (code %d)" % c}
                    self.kernel_gone(k, d)

    def fork_kernel(self):
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
        self.sel.register(ours.fileno(), selectors.EVENT_READ, lambda fd, k=k: self.on_kernel(k))
        self.forking[k.tag] = k
        return k

    def wait_forks(self):
        end = now() + 5
        while self.forking and now() < end:
            self.poll(0.05)

    def refill_spares(self):
        while len(self.spares) < self.nspares and self.zsock is not None:  # forking ones included
            self.spares.append(self.fork_kernel())

    def take_spare(self):
        """The oldest live spare, woken (SIGCONT: code of an earlier call may have stopped
        it); forks one only if there is none. The refill comes after the call."""
        while True:
            while self.spares and self.spares[0].dead is not None:
                self.spares.popleft()
            if not self.spares and self.zsock is not None:
                self.spares.append(self.fork_kernel())
            if self.spares and self.spares[0].pid is not None:
                k = self.spares.popleft()
                if not self.spare_alive(k):
                    # Killed by an earlier call's code (its exit report not read yet).
                    self.kill_kernel(k, {"message": "the spare was killed", "exit_code": 137, "retired": True})
                    continue
                self.signal_kernel(k, signal.SIGCONT)
                return k
            self.poll(0.05)

    def spare_alive(self, k):
        """Whether a spare is alive and will stay so: still the zygote's child, not a
        zombie, not exiting (PF_EXITING) and no SIGKILL pending."""
        fields = stat_fields(k.pid)
        if not fields:
            return False
        try:
            with open("/proc/%d/status" % k.pid, "rb") as f:
                status = dict(line.split(b":", 1) for line in f.read().splitlines() if b":" in line)
            pending = int(status[b"SigPnd"].strip(), 16) | int(status[b"ShdPnd"].strip(), 16)
            return (fields[0] not in (b"Z", b"X") and int(fields[1]) == self.zygote_pid
                    and not int(fields[6]) & PF_EXITING and not pending & (1 << (signal.SIGKILL - 1)))
        except (OSError, ValueError, IndexError, KeyError):
            return False

    def signal_kernel(self, k, sig):
        if k.pid is None:
            return
        try:
            os.killpg(k.pid, sig)
        except OSError:
            try:
                os.kill(k.pid, sig)
            except OSError:
                pass

    def kill_kernel(self, k, dead=None):
        if k.dead is None:
            self.kernel_gone(k, dead or {"message": "the kernel was killed", "exit_code": 137, "killed": True})
        self.signal_kernel(k, signal.SIGKILL)

    def kernel_gone(self, k, d):
        k.dead = d
        if k.sock is not None:
            try:
                self.sel.unregister(k.sock.fileno())
            except (KeyError, ValueError):
                pass
            k.sock.close()
            k.sock = None
        if k is self.session:
            self.session = None
            self.session_lost = True
        if k in self.spares:
            self.spares.remove(k)

    def on_kernel(self, k):
        call = self.call if (self.call is not None and self.call.kernel is k) else None
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
            if call is None or msg.get("seq") != call.seq or call.kdone is not None:
                continue  # not this call's: a kernel only ever speaks for its current call
            self.drain_available(call)
            self.flush_pending(call)
            self.on_kernel_msg(call, msg)
        for fd in k.reader.take_fds(64):
            os.close(fd)
        if not ok and k.sock is not None:
            # The control socket broke. Usually the kernel died and the zygote's exit
            # report (with the signal) follows at once; give it a moment, then kill.
            self.sel.unregister(k.sock.fileno())
            k.sock.close()
            k.sock = None
            self.eof_pending[k] = now() + 0.2

    def on_kernel_msg(self, call, msg):
        t = msg.get("t")
        if t == "display":
            data = msg.get("data")
            if isinstance(data, dict):
                data = {str(m): v for m, v in data.items() if isinstance(v, str)}
                size = sum(len(v) for v in data.values())
                call.display_bytes += size
                if call.display_bytes > call.hard:
                    self.over_limit(call, "display")
                elif data:
                    self.emit({"t": "display", "id": call.id, "data": data, "result": msg.get("result") is True})
        elif t == "figure":
            data = msg.get("data")
            if isinstance(data, str):
                try:
                    call.figures.append(base64.b64decode(data, validate=True))
                except ValueError:
                    pass
        elif t == "input_request":
            kernelops.input_request(self, call, msg)
        elif t == "clear_output":
            self.emit({"t": "clear_output", "id": call.id, "wait": msg.get("wait") is True})
        elif t == "done":
            call.kdone = msg
            call.end = now()

    # --- per-call output ------------------------------------------------------------
    def on_pipe(self, fd):
        call = self.call
        if call is None or fd not in call.pipes:
            return
        n = call.counts[call.pipes[fd]]
        if (self._read_once(call, fd) and call.counts.get(call.pipes.get(fd), n) - n < 16384
                and call.kdone is None and call.kernel.dead is None):
            # A small read: let the pipe fill a little before reading again, so that a
            # program writing many tiny pieces costs few reads and frames.
            call.nap[fd] = now() + COALESCE_S
            self.sync_pipes(call)

    def forward(self, call, stream, text):
        """Queue output; small writes are coalesced for up to COALESCE_S into one frame."""
        if not text:
            return
        if call.pend and call.pend[-1][0] == stream:
            call.pend[-1][1].append(text)
        else:
            call.pend.append((stream, [text]))
        if not call.pend_bytes:
            call.pend_since = now()
        call.pend_bytes += len(text)
        if call.pend_bytes >= COALESCE_BYTES:
            self.flush_pending(call)

    def flush_pending(self, call):
        for stream, parts in call.pend:
            self.emit({"t": "out", "id": call.id, "s": stream, "d": "".join(parts).replace("\x00", "\ufffd")})
        call.pend = []
        call.pend_bytes = 0

    def close_pipe(self, call, fd, final):
        stream = call.pipes.pop(fd)
        if fd in call.registered:
            self.sel.unregister(fd)
            call.registered.discard(fd)
        os.close(fd)
        self.forward(call, stream, call.decoders[stream].decode(b"", final=True))

    def drain_available(self, call):
        """Read whatever the pipes hold now (the kernel flushed before its message)."""
        if self.paused:
            return
        for fd in list(call.pipes):
            for _ in range(64):
                if fd not in call.pipes or not self._read_once(call, fd):
                    break

    def _read_once(self, call, fd):
        try:
            peek = os.read(fd, 1 << 16)
        except BlockingIOError:
            return False
        except OSError:
            peek = b""
        stream = call.pipes[fd]
        if not peek:
            self.close_pipe(call, fd, final=True)
            return False
        before = call.counts[stream]
        call.counts[stream] += len(peek)
        if call.counts[stream] > call.hard:
            peek = peek[:max(0, call.hard - before)]
            self.over_limit(call, stream)
        if peek:
            self.forward(call, stream, call.decoders[stream].decode(peek))
        return True

    def over_limit(self, call, stream):
        if call.verdict is None:
            call.verdict = "output_limit"
            call.message = "%s passed the hard output limit of %d bytes" % (stream, call.hard)
            self.stop_kernel(call)

    def stop_kernel(self, call):
        """Timeout / output limit: SIGINT, and SIGKILL 500 ms later (at once in oneshot)."""
        if call.kernel.dead is not None or call.kdone is not None:
            return
        if call.mode == "session":
            self.signal_kernel(call.kernel, signal.SIGINT)
            call.hard_kill_at = now() + SESSION_KILL_GRACE_S
        else:
            self.kill_kernel(call.kernel)

    def on_stdin_pipe(self, fd):
        call = self.call
        try:
            n = os.write(fd, call.stdin_data[:1 << 16])
            call.stdin_data = call.stdin_data[n:]
        except BlockingIOError:
            return
        except OSError:
            call.stdin_data = b""
        if not call.stdin_data:
            self.sel.unregister(fd)
            os.close(fd)
            call.stdin_fd = None

    # --- exec -----------------------------------------------------------------------
    def run_exec(self, req):
        mode = req.get("mode", "oneshot")
        lang = req.get("lang", "python")
        if mode not in ("oneshot", "session"):
            return self.emit({"t": "done", "id": req.get("id"), "fail": "unknown mode %r" % mode})
        if lang not in ("python", "shell"):
            return self.emit({"t": "done", "id": req.get("id"), "fail": "unknown lang %r" % lang})
        env = req.get("env") or {}
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            return self.emit({"t": "done", "id": req.get("id"), "fail": "env must map strings to strings"})
        unpacked = None
        if req.get("archive") is not None:
            # Before any kernel takes the call: no process of the owner runs while the
            # controller writes the workspace.
            unpacked = self.unpack_archive(req, mode)
            if unpacked is None:
                return None
        restarted = False
        direct = mode == "oneshot" and lang == "shell"
        if direct:
            k = self.direct_kernel()
        elif mode == "oneshot":
            k = self.take_spare()
        else:
            if self.session is None:
                restarted = self.session_lost
                self.session_lost = False
                self.session = self.take_spare()
            k = self.session
            while k.pid is None and k.dead is None:
                self.poll(0.05)
        # A spare forked right after the previous call may still be setting itself up
        # (copy-on-write faults of the preloaded heap): let it finish first, so the call's
        # CPU count holds only the call. Bounded: a kernel that never says so still runs.
        end = now() + 2.0
        while not k.ready and k.dead is None and k.count == 0 and now() < end:
            self.poll(min(0.05, max(0.0, end - now())))
        t_kernel = now()
        self.seq += 1
        call = Call(req, k, self.seq)
        call.unpack = unpacked
        call.mark("kernel_ready", t_kernel)
        self.wait_forks()
        if mode == "session":
            call.snapshot = set(live_pids())
            c = proc_cpu(k.pid) if k.pid is not None else None
            call.cpu0 = c[1] if c else None
        elif k.pid is not None:
            call.cpu0 = thread_cpu(k.pid)  # the spare's own start-up is not the call's
        call.orphans0 = self.orphan_cpu
        call.spare0 = {sp.pid: thread_cpu(sp.pid) or 0.0 for sp in self.spares if sp.pid is not None}
        call.cg = self.own_cpu()
        oom0 = oom_kills()
        r_out, w_out = os.pipe2(os.O_CLOEXEC)
        r_err, w_err = os.pipe2(os.O_CLOEXEC)
        fds = [w_out, w_err]
        stdin = req.get("stdin")
        if isinstance(stdin, str):
            r_in, w_in = os.pipe2(os.O_CLOEXEC)
            fds.append(r_in)
            call.stdin_data = stdin.encode()
            call.stdin_fd = w_in
        msg = {"op": "exec", "seq": call.seq, "mode": mode, "lang": lang, "code": str(req.get("code", "")),
               "env": env, "nfds": len(fds), "allow_stdin": mode == "session" and bool(req.get("allow_stdin")),
               "notebook": bool(req.get("notebook"))}
        k.count += 1
        self.call = call
        if direct:
            self.spawn_shell(call, k, msg["code"], env, fds)
        else:
            try:
                if k.dead is not None:
                    raise OSError("kernel already dead")
                wire.send(k.sock, msg, fds)
            except (OSError, AttributeError):
                if k.dead is None:
                    self.kill_kernel(k, {"message": "the kernel did not take the call", "exit_code": 137})
        for fd in fds[:2] + fds[3:]:
            os.close(fd)
        if len(fds) > 2:
            os.close(fds[2])
        for fd, name in ((r_out, "stdout"), (r_err, "stderr")):
            os.set_blocking(fd, False)
            try:
                fcntl.fcntl(fd, F_SETPIPE_SZ, 1 << 20)
            except OSError:
                pass
            call.pipes[fd] = name
        if call.stdin_fd is not None:
            os.set_blocking(call.stdin_fd, False)
            self.sel.register(call.stdin_fd, selectors.EVENT_WRITE, self.on_stdin_pipe)
        self.update_pause()
        call.mark("sent")
        # Run until the kernel is done or dead.
        while call.kdone is None and k.dead is None:
            t = now()
            if t >= call.deadline and call.verdict is None:
                call.verdict = "timeout"
                call.message = "timed out after %d ms" % int(req.get("timeout_ms") or 30000)
                self.stop_kernel(call)
            if call.hard_kill_at is not None and t >= call.hard_kill_at:
                self.kill_kernel(k)
                break
            wake = call.deadline if call.verdict is None else (call.hard_kill_at or t + 0.05)
            if call.int_repeat_until is not None:
                if t >= call.int_repeat_until:
                    call.int_repeat_until = None
                elif t >= call.int_next:
                    self.signal_kernel(k, signal.SIGINT)
                    call.int_next = t + 0.05
                if call.int_repeat_until is not None:
                    wake = min(wake, call.int_next)
            self.poll(max(0.0, wake - t))
        if call.end is None:
            call.end = now()
        if call.cg is not None:
            call.cg_end = self.own_cpu()
            call.spare_used = self.spare_cpu_since(call.spare0)
        call.mark("kernel_done")
        if call.stdin_fd is not None:
            self.sel.unregister(call.stdin_fd)
            os.close(call.stdin_fd)
            call.stdin_fd = None
        # Leftover processes hold the pipes open: kill them, then drain to EOF.
        if mode == "oneshot":
            self.kill_kernel(k, {"message": "done", "exit_code": 0, "retired": True}) if k.dead is None else None
            # A direct shell's pid was reaped already and may be a leftover's now.
            self.kill_all(already=[] if k.direct is not None else [k.pid])
        elif k.dead is not None:
            self.kill_new(call, keep_background=bool(req.get("background")))
        elif not req.get("background"):
            n = self.kill_new(call, keep_background=False)
            if n:
                call.warnings.append("killed %d process(es) left running by the call" % n)
        call.mark("killed")
        # The call's processes are gone: nothing more to coalesce, so read the pipes to EOF
        # now rather than after their naps (up to COALESCE_S each, a few ms per call; on_pipe
        # naps only while the call runs).
        call.nap.clear()
        call.eof_deadline = now() + EOF_GRACE_S
        while call.pipes and now() < call.eof_deadline:
            if self.paused:
                # Airlock is not reading: the grace period starts once it reads again.
                call.eof_deadline = now() + EOF_GRACE_S
                self.poll(0.05)
            else:
                self.poll(call.eof_deadline - now())
        # What the call wrote is in the pipes even when EOF did not come in time (a process
        # kept a write end open, or this container, at low CPU shares, was not scheduled
        # until the grace had passed): read what is there before closing them.
        self.drain_available(call)
        for fd in list(call.pipes):
            self.paused_unregister_safe(call, fd)
        call.mark("eof")
        self.flush_pending(call)
        self.call = None
        self.paused = False
        self.finish(call, oom0, restarted)
        if mode == "oneshot":
            self.clean_files()
            self.refill_spares()
        elif k.dead is not None:
            self.session = None
            self.session_lost = False
            self.session = self.fork_kernel()

    # --- one-shot shell calls without a kernel ---------------------------------------
    def direct_kernel(self):
        """The stand-in Kernel of a one-shot shell call. The spares wait through it as
        through a Python call (not dumpable, signals blocked: see Controller.__init__)."""
        self.wait_forks()
        k = Kernel(0)
        k.ready = True
        return k

    def spawn_shell(self, call, k, code, env, fds):
        """Run a one-shot shell call as /bin/bash -c CODE, the controller's own child: in a
        new session (its process group is what timeouts and interrupts signal), with the
        call's pipes on 1/2 (and 0), none of the controller's fds (all CLOEXEC, close_fds),
        the environment a kernel would give it (the container's plus the call's), cwd /work.
        SIGINT is default in it because the controller handles SIGINT rather than ignoring it
        (an ignored signal stays ignored across exec). No preexec_fn: it costs a full fork
        (~15 ms here) where Popen otherwise uses vfork. The shell inherits oom_score_adj
        1000, as a kernel sets for itself, so the OOM killer picks the call, not the
        controller: the controller raises its own for the spawn and puts it back (the
        child's /proc entry cannot be written: it stays non-dumpable, so not ours, until
        well into its exec; a wrapper that writes its own costs an exec through the
        container's fuse-overlayfs)."""
        full = dict(os.environ)
        full.update({str(a): str(b) for a, b in env.items()})
        cwd = WORK if os.path.isdir(WORK) else "/tmp"
        try:
            set_oom(b"1000")
            p = subprocess.Popen(["/bin/bash", "-c", code], stdin=fds[2] if len(fds) > 2 else subprocess.DEVNULL,
                                 stdout=fds[0], stderr=fds[1], cwd=cwd, env=full, close_fds=True,
                                 start_new_session=True)
        except OSError as exc:
            k.dead = {"message": "the shell could not be started: %s" % exc, "exit_code": 127}
            return
        finally:
            set_oom(OOM_OWN)
        k.pid, k.direct = p.pid, p
        p.returncode = 0  # reaped by on_sigchld, never by Popen (its __del__ must not wait)
        self.direct[p.pid] = k

    def direct_exited(self, k, status, ru):
        """Our direct shell exited: its status is the call's answer."""
        k.cpu_s = ru.ru_utime + ru.ru_stime
        call = self.call if (self.call is not None and self.call.kernel is k) else None
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

    def unpack_archive(self, req, mode):
        """Unpack the request's archive into the emptied workspace; returns what was
        unpacked, or None after answering the request with its refusal."""
        rid = req.get("id")

        def refuse(msg, code="bad_request"):
            self.emit({"t": "done", "id": rid, "fail": msg, "code": code})

        t0 = now()
        data, req["archive"] = req.get("archive"), None
        if not WORKSPACE_OWNED:
            return refuse("this container's /workspace is an input folder, not its own: it cannot "
                          "take an archive", "internal")
        if not isinstance(data, str):
            return refuse("archive must be base64 text")
        try:
            raw = base64.b64decode(data, validate=True)
        except ValueError:
            return refuse("archive is not valid base64")
        del data
        if not self.reset_workspace():
            return refuse("the workspace could not be emptied", "internal")

        def bound(key, default):
            v = req.get(key)
            return int(v) if isinstance(v, int) and v > 0 else default

        archive = load_archive()
        try:
            info = archive.unpack(WORKSPACE, raw, bound("archive_max_entries", archive.MAX_ENTRIES),
                                  bound("archive_max_bytes", archive.MAX_BYTES),
                                  bound("archive_max_ratio", archive.MAX_RATIO))
        except archive.Refused as exc:
            self.reset_workspace()
            self.seal_workspace()
            return refuse(str(exc))
        except Exception as exc:  # a bug: still leave nothing half unpacked behind
            self.reset_workspace()
            self.seal_workspace()
            return refuse("unpacking the archive failed: %s: %s" % (type(exc).__name__, exc), "internal")
        info["unpack_ms"] = round((now() - t0) * 1000, 3)
        return info

    def reset_workspace(self):
        """Empty the controller's own /workspace and make it writable for unpacking;
        reports whether it is empty."""
        try:
            os.chmod(WORKSPACE, 0o755)
        except OSError:
            pass
        files.clear_dir(WORKSPACE)
        try:
            return not os.listdir(WORKSPACE)
        except OSError:
            return False

    def seal_workspace(self):
        """An empty workspace is read-only, like the image's own /workspace folder."""
        try:
            os.chmod(WORKSPACE, 0o555)
        except OSError:
            pass

    def own_cpu(self):
        """[container, controller, zygote] CPU seconds now; None if the cgroup is unreadable."""
        cg = cgroup_cpu()
        if cg is None:
            return None
        z = thread_cpu(self.zygote_pid) if self.zygote_pid else 0.0
        return [cg, time.process_time(), z or 0.0]

    def spare_cpu_since(self, spare0):
        """CPU seconds the spares used since spare0 (pid -> CPU then). A pid counts only
        while the zygote is still its parent: code that killed a spare cannot have the CPU
        of a process of its own, given the pid, taken off its call's count."""
        used = 0.0
        for pid, c0 in spare0.items():
            if proc_ppid(pid) == self.zygote_pid:
                used += max(0.0, (thread_cpu(pid) or c0) - c0)
        return used

    def call_cpu(self, call):
        """CPU seconds the call's processes used between the exec and the kernel's answer
        (or death): the container's cgroup counter, less what the controller, the zygote and
        the spares used meanwhile (the container runs one call at a time; a spare forked
        after the previous call may still be setting itself up). Without a readable cgroup: the kernel's own accounting (what it
        waited for included) plus orphans the controller reaped. None if unknown."""
        if call.cg is not None and call.cg_end is not None:
            a, b = call.cg, call.cg_end
            return max(0.0, (b[0] - a[0]) - (b[1] - a[1]) - max(0.0, b[2] - a[2]) - call.spare_used)
        return self.proc_call_cpu(call)

    def proc_call_cpu(self, call):
        k = call.kernel
        self.on_sigchld(self.wake_r)
        if k.dead is not None:
            # It exited: the zygote's exit report carries its rusage (wait4).
            end = now() + 0.2
            while k.cpu_s is None and k.pid is not None and k.pid in self.by_pid and now() < end:
                self.poll(0.01)
            total = k.cpu_s
        else:
            c = proc_cpu(k.pid) if k.pid is not None else None
            total = c[1] if c else None
        if total is None or call.cpu0 is None:
            return None
        return max(0.0, total - call.cpu0) + max(0.0, self.orphan_cpu - call.orphans0)

    def paused_unregister_safe(self, call, fd):
        stream = call.pipes.pop(fd)
        if fd in call.registered:
            self.sel.unregister(fd)
            call.registered.discard(fd)
        os.close(fd)
        self.forward(call, stream, call.decoders[stream].decode(b"", final=True))

    def finish(self, call, oom0, restarted):
        k, kd = call.kernel, call.kdone
        died = k.dead is not None and not k.dead.get("retired") and kd is None
        error = None
        if kd is not None:
            status = kd.get("status") if kd.get("status") in ("ok", "error", "interrupted") else "error"
            code = kd.get("exit_code") if isinstance(kd.get("exit_code"), int) else 1
            e = kd.get("error")
            if isinstance(e, dict):
                tb = e.get("traceback")
                error = {"name": str(e.get("name", "")), "value": str(e.get("value", "")),
                         "traceback": [str(x) for x in tb][:1000] if isinstance(tb, list) else []}
        else:
            status, code = "error", k.dead.get("exit_code", 137) if k.dead else 137
        message = call.message
        if call.verdict in ("timeout", "output_limit"):
            status = call.verdict
            if kd is None:
                code = 137
        elif call.verdict == "interrupted":
            status = "interrupted"
        elif died:
            if oom_kills() > oom0:
                status, message = "oom", "the kernel was killed for lack of memory (%s)" % k.dead.get("message", "")
            else:
                message = k.dead.get("message", "the kernel died")
        if status == "error" and oom_kills() > oom0:
            # a process of the call (not the kernel) was OOM-killed: say so
            status = "oom"
            message = message or "a process of the call was killed for lack of memory"
        if status == "ok" and not message:
            message = ""
        artifacts = self.collect(call)
        call.mark("collected")
        restarted_now = call.mode == "session" and k.dead is not None
        done = {"t": "done", "id": call.id, "status": status, "exit_code": code, "error": error,
                "execution_count": k.count if call.mode == "session" else 1,
                "duration_ms": round((call.end - call.start) * 1000, 3),
                "artifacts": artifacts, "warnings": call.warnings[:MAX_WARNINGS] + (
                    ["... and %d more warnings" % (len(call.warnings) - MAX_WARNINGS)]
                    if len(call.warnings) > MAX_WARNINGS else []),
                "kernel_restarted": bool(restarted or restarted_now), "message": message,
                "dropped": {"stdout": 0, "stderr": 0}}
        cpu = self.call_cpu(call)
        if cpu is not None:
            done["cpu_seconds"] = round(cpu, 6)
        if call.unpack is not None:
            done["archive"] = call.unpack
        if TRACE:
            done["trace"] = {name: round((t - call.t_recv) * 1000, 3) for name, t in call.marks}
            pc = self.proc_call_cpu(call)
            done["trace"]["cpu_proc_ms"] = round(pc * 1000, 3) if pc is not None else None
        self.emit(done)

    # --- artifacts ------------------------------------------------------------------
    def collect(self, call):
        req = call.req
        max_count = int(req.get("max_artifacts") if req.get("max_artifacts") is not None else 10)
        max_bytes = int(req.get("max_artifact_bytes") or (8 << 20))
        out, used = [], 0

        def add(name, data, mime):
            nonlocal used
            used += len(data)
            out.append({"name": name, "mime": mime, "size": len(data),
                        "sha256": hashlib.sha256(data).hexdigest(),
                        "data": base64.b64encode(data).decode("ascii")})

        for i, png in enumerate(call.figures):
            name = "figure-%d.png" % (i + 1)
            if len(out) >= max_count:
                call.warnings.append("skipped %s: artifact count limit %d reached" % (name, max_count))
            elif used + len(png) > max_bytes:
                call.warnings.append("skipped %s: artifact size limit %d bytes reached" % (name, max_bytes))
            else:
                add(name, png, "image/png")
        if call.mode == "oneshot":
            self.reported = {}
        for dfd, name, rel, st in files.walk(WORK):
            if not (rel.startswith("outputs/") or name.lower().endswith(IMAGE_EXTS)):
                continue
            key = (st.st_mtime_ns, st.st_size)
            if self.reported.get(rel) == key:
                continue
            self.reported[rel] = key
            if len(out) >= max_count:
                call.warnings.append("skipped %s: artifact count limit %d reached" % (rel, max_count))
                continue
            try:
                data, st2 = files.read_file(dfd, name, max_bytes - used)
            except (OSError, ValueError) as exc:
                call.warnings.append("skipped %s: %s" % (rel, exc))
                continue
            self.reported[rel] = (st2.st_mtime_ns, st2.st_size)
            add(rel, data, mimetypes.guess_type(name)[0] or "application/octet-stream")
        return out

    # --- processes and files --------------------------------------------------------
    def protected(self):
        """The pids a cleanup must not kill: the controller, the zygote and the kernels
        still to be used. A kernel's pid counts only while the zygote is its parent: if code
        killed a spare and a process of its own got the pid before the zygote's exit
        report came, that process is not spared."""
        keep = {os.getpid(), 1, os.getppid(), self.zygote_pid}
        for k in list(self.spares) + ([self.session] if self.session else []):
            if k.pid is not None and k.dead is None and proc_ppid(k.pid) == self.zygote_pid:
                keep.add(k.pid)
        return keep

    def kill_pids(self, select_fn, already=()):
        """SIGKILL the selected processes until none is left alive; returns how many."""
        self.wait_forks()
        # A process with SIGKILL pending can neither fork nor return to user code, so
        # scanning until a pass finds no process not yet signalled is enough. Processes
        # already signalled are not even looked at: reading /proc/<pid>/stat of a process
        # tearing down a large address space waits for that teardown.
        killed = set(already)
        end = now() + 1.0
        while now() < end:
            victims = [p for p in proc_pids() if p not in killed and select_fn(p) and proc_state(p) not in "ZX?"]
            if not victims:
                break
            for p in victims:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
                killed.add(p)
        return len(killed)

    def kill_all(self, already=()):
        keep = self.protected()
        return self.kill_pids(lambda p: p not in keep, already)

    def kill_new(self, call, keep_background):
        if keep_background:
            return 0
        keep = self.protected() | call.snapshot
        return self.kill_pids(lambda p: p not in keep)

    def clean_files(self):
        for d in CLEAN_DIRS:
            files.clear_dir(d)
        if WORKSPACE_OWNED:
            self.reset_workspace()
            self.seal_workspace()
        for d in (os.path.join(WORK, "outputs"), "/tmp/.mpl"):
            try:
                os.makedirs(d, exist_ok=True)
            except OSError:
                pass

    # --- other ops ------------------------------------------------------------------
    def stats(self):
        pids = live_pids()
        cpu = cgroup_cpu()
        cpu = cpu * 1000 if cpu is not None else None
        mem = _read_int_file("/sys/fs/cgroup/memory/memory.usage_in_bytes")
        if mem is None:
            mem = _read_int_file("/sys/fs/cgroup/memory.current")
        return {"procs": sum(1 for s in pids.values() if s not in "ZX"),
                "cpu_ms": round(cpu, 3) if cpu is not None else None, "mem_bytes": mem}

    def handle(self, req):
        op, rid = req.get("op"), req.get("id")
        try:
            if op == "exec":
                return self.run_exec(req)
            if op == "introspect":
                return kernelops.introspect(self, req, Call)
            if op == "restart":
                if req.get("_done_during_call") and self.session is not None and self.session.count == 0:
                    pass  # the call's end already forked the fresh kernel
                elif self.session is not None:
                    self.kill_kernel(self.session)
                    self.session = self.fork_kernel()
                else:
                    self.session = self.fork_kernel()
                self.session_lost = False
                while self.session.pid is None and self.session.dead is None:
                    self.poll(0.05)
                return self.emit({"t": "done", "id": rid, "restarted": True})
            if op == "put":
                if not isinstance(req.get("data", ""), str):
                    raise ValueError("data must be base64 text")
                data = base64.b64decode(req.get("data", ""), validate=True)
                st = files.write_file(WORK, req.get("path"), data, int(req.get("offset") or 0))
                rel = "/".join(files.split(WORK, req.get("path")))
                self.reported[rel] = (st.st_mtime_ns, st.st_size)
                return self.emit({"t": "done", "id": rid, "size": st.st_size})
            if op == "get":
                length = int(req.get("length") or req.get("max_bytes") or (8 << 20))
                data, size = files.get_chunk(WORK, req.get("path"), int(req.get("offset") or 0), length)
                return self.emit({"t": "done", "id": rid, "size": size,
                                  "sha256": hashlib.sha256(data).hexdigest(),
                                  "data": base64.b64encode(data).decode("ascii")})
            if op == "ls":
                return self.emit({"t": "done", "id": rid, "entries": files.list_dir(WORK, req.get("path") or "")})
            return self.emit({"t": "done", "id": rid, "fail": "unknown op %r" % op})
        except (OSError, ValueError, TypeError) as exc:
            msg = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return self.emit({"t": "done", "id": rid, "fail": "%s: %s" % (op, msg)})

    def shutdown(self, code):
        try:
            keep = {os.getpid(), 1, os.getppid()}
            for p in live_pids():
                if p not in keep:
                    try:
                        os.kill(p, signal.SIGKILL)
                    except OSError:
                        pass
            if self.out:
                os.set_blocking(self.outfd, True)
                try:
                    os.write(self.outfd, self.out)
                except OSError:
                    pass
        finally:
            os._exit(code)

    def run(self):
        for d in (os.path.join(WORK, "outputs"), "/tmp/.mpl"):
            try:
                os.makedirs(d, exist_ok=True)
            except OSError:
                pass
        if WORKSPACE_OWNED:
            self.seal_workspace()
        self.start_zygote()
        self.refill_spares()
        while self.spares and self.spares[0].pid is None and self.spares[0].dead is None:
            self.poll(0.05)
        ready = {"t": "ready", "pid": os.getpid(), "boot_ms": round((now() - self.t0) * 1000, 3),
                 "features": ["cpu_seconds"] + (["archive"] if WORKSPACE_OWNED else [])}
        if os.getpid() != 1:
            # pid 1 (docker-init) holds the container's stdin/stdout and, being of our uid
            # and dumpable, lets user code open /proc/1/fd/0 and /proc/1/fd/1.
            ready["warnings"] = ["the controller is not pid 1: user code can reach the container's "
                                 "stdin/stdout through /proc/1/fd; run it without --init"]
        self.emit(ready)
        while True:
            if self.queue:
                self.handle(self.queue.popleft())
            else:
                self.poll(None)


def set_oom(value):
    """Set the controller's own oom_score_adj (raising is always allowed; back down to the
    value it started with is allowed too, that being at or above its floor)."""
    if OOM_FD is not None:
        try:
            os.pwrite(OOM_FD, value, 0)
        except OSError:
            pass


def main():
    if os.getuid() == 0:
        sys.exit("controller: refusing to run as root (it kills every process of its uid)")
    # Opened while still dumpable (afterwards /proc/self is root's): spawn_shell raises
    # its own score around a spawn so the shell inherits 1000, then puts it back.
    global OOM_FD, OOM_OWN
    try:
        OOM_FD = os.open("/proc/self/oom_score_adj", os.O_RDWR | os.O_CLOEXEC)
        OOM_OWN = os.pread(OOM_FD, 16, 0).strip() or b"0"
    except OSError:
        OOM_FD = None
    try:
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    # SIGINT is handled (by doing nothing), not ignored: an ignored signal would stay
    # ignored in the shells spawn_shell starts, and interrupts could not stop them.
    signal.signal(signal.SIGINT, lambda *_: None)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    c = Controller()
    # As pid 1 (no docker-init) a signal without a handler is ignored: docker stop's SIGTERM
    # must end the container at once. Orphans are reaped in on_sigchld.
    signal.signal(signal.SIGTERM, lambda *_: c.shutdown(143))
    c.run()


if __name__ == "__main__":
    main()
