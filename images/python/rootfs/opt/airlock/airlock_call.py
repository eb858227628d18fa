"""The call lifecycle: one exec request from its kernel's choice to its done frame.

  choose   a spare (one-shot; a tool in a session), the session's kernel, or a bash of
           the controller's own (shell); the archive, if any, is unpacked before
  begin    snapshot (or freeze) of the session's processes, CPU readings, fresh pipes,
           the exec sent with a random token
  wait     until the kernel's done or death; the deadline, the output cap, interrupts,
           the call's own messages forwarded (displays, clear_output, input requests,
           whose answers go down the call's answers pipe)
  end      the sweep, the pipes read to EOF, the done frame built from what the controller
           observed (status checked, artifacts read by the controller), then the files
           cleaned and the spares refilled (one-shot) or the session's kernel replaced
See PROTOCOL.md "Modes of exec".
"""

import base64
import os
import signal
import time

import airlock_cleanup as cleanup
import airlock_proc as proc
import airlock_wire as wire
from airlock_loop import now
from airlock_output import Output
from airlock_workspace import CallRefused

INT_WINDOW_S = 0.5  # see Call.int_repeat_until
SESSION_KILL_GRACE_S = 0.5
# The deadline moves by the time the code waited for a CPU (proc.run_delay), up to this many
# times the timeout: a busy machine makes a call slower, not a timeout. Airlock applies the
# same bound to its own deadline (its "stretch" frame handling).
STRETCH_MAX = 2.0
STRETCH_MIN_S = 0.01  # smaller waits are not worth a frame
MAX_WARNINGS = 20
# After a one-shot call's reply, how long the controller asks whether its stopped kernel's
# threads have all stopped (else the files are emptied after the kernel's exit), and how
# often.
SETTLE_S = 0.001
SETTLE_NAP_S = 0.0001
MAX_PROMPT = 4096  # characters of an input() prompt forwarded
# The started frame and what follows it are held this long (Link.hold): a call done by
# then answers in one write, its started, output and done frames together (one wake-up of
# Airlock's reader, not three); Airlock's deadline for the answer starts that much later.
STARTED_HOLD_S = 0.002
TRACE = os.environ.get("AIRLOCK_TRACE") == "1"  # done frames carry "trace": {phase: ms}


class Call:
    """State of the exec request being run."""

    def __init__(self, req, kernel, seq, kind):
        self.req = req
        self.id = req.get("id")
        self.kernel = kernel
        self.seq = seq
        # Only the kernel's own reporting code gets the token (user code is given no
        # reference to it): a done without it is not the kernel's.
        self.token = os.urandom(16).hex()
        self.kind = kind  # oneshot | session (its kernel) | shell (a bash of ours) | tool
        self.mode = req.get("mode", "oneshot")
        self.lang = req.get("lang", "python")  # shell: the kernel is a bash of the controller's
        self.hard = int(req.get("hard_output_bytes") or (64 << 20))
        # Notebook conventions: the value as a result display, figures as displays.
        self.notebook = req.get("notebook") is True
        # input() asks Airlock (a session's Python call without stdin): answers pipe.
        self.ask = kind == "session" and req.get("allow_stdin") is True and req.get("stdin") is None
        self.inputs_waiting = 0  # input requests forwarded and not answered yet
        self.output = None
        self.display_bytes = 0
        self.kdone = None
        self.figures = []
        self.warnings = []
        self.start = now()
        self.end = None
        self.timeout_s = max(1, int(req.get("timeout_ms") or 30000)) / 1000.0
        self.deadline = self.start + self.timeout_s
        self.waited0 = None  # the kernel's run_delay when its code was sent (see STRETCH_MAX)
        self.stretched = 0.0  # seconds the deadline moved for that wait
        self.hard_kill_at = None
        # An interrupt in the call's first INT_WINDOW_S may reach the kernel before it
        # arms its SIGINT handler (SIGINT is ignored between calls): repeat it until then.
        self.int_repeat_until = None
        self.int_next = 0.0
        self.int_sent = False  # an interrupt request reached this call
        self.verdict = None  # "timeout" | "output_limit" | "interrupted" set by the controller
        self.message = ""
        self.snapshot = {}  # pid -> start time of the processes a session call may leave
        self.restart_op = False  # a restart request ended the call
        self.restarted = False  # the session's kernel died since its previous call
        self.oom0 = 0  # the cgroup's OOM kills when the call started
        self.t_recv = req.get("_t_recv", now())
        self.marks = []
        self.cpu0 = None  # the kernel's CPU seconds when the call started (CpuMeter)
        self.orphans0 = 0.0
        self.cg = None  # [container, controller, zygote] CPU seconds at the call's start ...
        self.cg_end = None  # ... and when the kernel answered or died
        self.spare0 = {}  # spare pid -> its CPU seconds at the call's start ...
        self.spare_used = 0.0  # ... and how much they used during it (a spare's set-up)
        self.spares_forking = []  # spares without a pid yet at the call's start
        self.unpack = None  # {"format", "entries", "bytes", "unpack_ms"} of the call's archive
        self.release_at = None  # when the held started frame goes out (STARTED_HOLD_S)

    def mark(self, name, t=None):
        """Note when a phase ended (AIRLOCK_TRACE=1: done carries them)."""
        if TRACE:
            self.marks.append((name, now() if t is None else t))

    def running(self):
        """Whether the call's code has not answered or died yet."""
        return self.kdone is None and self.kernel.dead is None


def request_problem(req):
    """Why an exec request cannot run (unknown mode or lang, bad env), or None."""
    if req.get("mode", "oneshot") not in ("oneshot", "session"):
        return "unknown mode %r" % req.get("mode")
    if req.get("lang", "python") not in ("python", "shell"):
        return "unknown lang %r" % req.get("lang")
    env = req.get("env") or {}
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        return "env must map strings to strings"
    return None


def checked_status(status, code, interrupted):
    """The (status, exit_code) a kernel's done may claim, made consistent with what the
    controller knows: "interrupted" only after Airlock's interrupt (else an error, as for
    a KeyboardInterrupt the code raised itself), "ok" only with exit code 0, an error never
    with 0."""
    if type(code) is not int:
        code = 1
    if status == "interrupted" and interrupted:
        return "interrupted", 130
    if status == "ok" and code == 0:
        return "ok", 0
    return "error", code or 1


def outcome(call, oom_kills):
    """(status, exit_code, error, message) of a finished call, from what the controller
    saw (verdicts, the kernel's death, oom_kills(): the cgroup's count now, read only when
    it matters) and the kernel's checked answer."""
    k, kd = call.kernel, call.kdone
    died = k.dead is not None and not k.dead.get("retired") and kd is None
    error = None
    if kd is not None:
        status, code = checked_status(kd.get("status"), kd.get("exit_code"), call.int_sent)
        e = kd.get("error")
        if isinstance(e, dict) and status != "ok":
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
        if oom_kills() > call.oom0:
            status, message = "oom", "the kernel was killed for lack of memory (%s)" % k.dead.get("message", "")
        else:
            message = k.dead.get("message", "the kernel died")
    if status == "error" and oom_kills() > call.oom0:
        # a process of the call (not the kernel) was OOM-killed: say so
        status = "oom"
        message = message or "a process of the call was killed for lack of memory"
    return status, code, error, message


def capped(warnings):
    """At most MAX_WARNINGS warnings, and how many more there were."""
    more = len(warnings) - MAX_WARNINGS
    return warnings[:MAX_WARNINGS] + (["... and %d more warnings" % more] if more > 0 else [])


def output_marks(msg):
    """A call's message's "o": [stdout bytes, stderr bytes] the code had written through
    sys.stdout/sys.stderr when it sent it, as {stream: n}; None if absent or not two
    non-negative ints (a done, or the code's own). Per call pipes: wrong marks only reorder
    that call's own output around its own message."""
    o = msg.get("o")
    if msg.get("t") == "done" or type(o) is not list or len(o) != 2:
        return None
    if any(type(n) is not int or n < 0 for n in o):
        return None
    return {"stdout": o[0], "stderr": o[1]}


class Runner:
    """Runs exec requests, one at a time, to their done frames."""

    def __init__(self, c):
        self.loop, self.link, self.kernels = c.loop, c.link, c.kernels
        self.session, self.shells, self.meter = c.session, c.shells, c.meter
        self.artifacts, self.workspace = c.artifacts, c.workspace
        self.clean_files, self.reap = c.clean_files, c.reap
        self.call = None
        self.seq = 0
        self.after = {}  # seconds the previous call's work after its done frame took, by phase

    def next_seq(self):
        """A seq no other call or question of this container has."""
        self.seq += 1
        return self.seq

    def call_of(self, k):
        """The running call if its kernel is k."""
        return self.call if self.call is not None and self.call.kernel is k else None

    def run(self, req):
        """One exec: its refusal, or the call run to its done frame."""
        problem = request_problem(req)
        if problem:
            return self.link.emit({"t": "done", "id": req.get("id"), "fail": problem})
        unpacked = None
        if req.get("archive_stream") is not None:
            try:
                unpacked = self.workspace.finish_stream(req)
            except CallRefused as exc:
                return self.link.emit({"t": "done", "id": req.get("id"), "fail": str(exc), "code": exc.code})
        else:
            # A stream left unfinished (its sender went away) never reaches a later call.
            self.workspace.abort_stream()
        if req.get("archive") is not None:
            # Before any kernel takes the call: no process of the owner runs while the
            # controller writes the workspace.
            try:
                unpacked = self.workspace.unpack(req)
            except CallRefused as exc:
                return self.link.emit({"t": "done", "id": req.get("id"), "fail": str(exc), "code": exc.code})
        call = self._begin(req, unpacked)
        try:
            self._wait(call)
            self._end(call)
        finally:
            self.call = None
            self.link.on_flush = lambda: None
            self.link.release()

    # --- begin ----------------------------------------------------------------------
    def _choose(self, req):
        """(kind, kernel, restarted) of a call: see Call.kind."""
        mode, lang = req.get("mode", "oneshot"), req.get("lang", "python")
        kind = "oneshot" if mode == "oneshot" else "shell" if lang == "shell" \
            else "tool" if req.get("generated") is True else "session"
        if lang == "shell":
            self.kernels.wait_forks()
            self.kernels.retire_armed()
            return kind, self.shells.stand_in(), False
        if kind in ("oneshot", "tool"):
            return kind, self.kernels.take_spare(tool=req.get("generated") is True), False
        k, restarted = self.session.kernel_for_call()
        return kind, k, restarted

    def _begin(self, req, unpacked):
        # The previous one-shot call's kernel gone (its exit reported), and the children
        # it had, handed to the controller by that exit, reaped: nothing of it is listed.
        if self.kernels.retired:
            self.kernels.wait_retired()
            self.reap()
        kind, k, restarted = self._choose(req)
        self.kernels.wait_ready(k)
        t_kernel = now()
        call = Call(req, k, self.next_seq(), kind)
        call.unpack, call.restarted = unpacked, restarted
        call.mark("kernel_ready", t_kernel)
        if kind != "oneshot":
            # A session's snapshot of its processes must not see a spare being forked.
            self.kernels.wait_forks()
        # A one-shot call does not wait for the previous call's refill: the zygote forks
        # while the call runs (that fork's pid is awaited before the teardown's listing),
        # and the spare's CPU is kept out of the call's count (CpuMeter).
        call.mark("forks_begin")
        if kind == "tool":
            call.snapshot = self.session.freeze_for(k)
        elif kind in ("session", "shell"):
            # Before the kernel runs again: what its threads start from now on is the call's.
            call.snapshot = self.session.processes()
        if kind in ("session", "shell"):
            self.session.count += 1
        # The readings, the pipes, then the session's kernel let run: read while it is
        # stopped, its CPU is exactly where the call starts (and /proc/<pid>/stat of a
        # process just woken is slower to read), and it wakes as its code arrives.
        self.meter.start(call)
        call.oom0 = proc.oom_kills()
        call.output = out = Output(self.loop, self.link, call.id, call.hard, call.running,
                                   lambda stream: self.over_limit(call, stream))
        out.open(req.get("stdin"), answers=call.ask)
        k.count += 1
        self.call = call
        self.link.on_flush = out.update_pause
        if kind == "session":
            self.session.resume()
        self._send(call)
        if k.pid is not None:  # a shell's bash has one from _send
            call.waited0 = proc.run_delay(k.pid)
        # Airlock's deadline for the answer counts from here, as the call's timeout does
        # (within STARTED_HOLD_S).
        self.link.hold()
        call.release_at = now() + STARTED_HOLD_S
        self.link.emit({"t": "started", "id": call.id})
        out.start()
        call.mark("sent")
        return call

    def _send(self, call):
        req, k, fds = call.req, call.kernel, call.output.kernel_fds
        code, env = str(req.get("code", "")), req.get("env") or {}
        if call.lang == "shell":
            self.shells.spawn(k, code, env, fds)
            return
        msg = {"op": "exec", "seq": call.seq, "token": call.token, "mode": call.mode, "lang": "python",
               "code": code, "env": env, "generated": req.get("generated") is True,
               "notebook": call.notebook, "allow_stdin": call.ask, "nfds": len(fds)}
        try:
            if k.dead is not None:
                raise OSError("kernel already dead")
            wire.send(k.sock, msg, fds)
        except (OSError, AttributeError):
            if k.dead is None:
                self.kernels.kill(k, {"message": "the kernel did not take the call", "exit_code": 137})

    # --- wait -----------------------------------------------------------------------
    def _wait(self, call):
        """Run until the call's kernel (or shell) is done or dead: the deadline, the hard
        kill after a session's interrupt grace, the repeated early interrupt."""
        k = call.kernel
        while call.running():
            t = now()
            if t >= call.deadline and call.verdict is None and self._stretch(call):
                continue
            if t >= call.deadline and call.verdict is None:
                call.verdict = "timeout"
                call.message = "timed out after %d ms" % int(call.req.get("timeout_ms") or 30000)
                self.stop_kernel(call)
            if call.hard_kill_at is not None and t >= call.hard_kill_at:
                self.kernels.kill(k)
                break
            wake = call.deadline if call.verdict is None else (call.hard_kill_at or t + 0.05)
            if call.release_at is not None:
                if t >= call.release_at:
                    call.release_at = None
                    self.link.release()
                else:
                    wake = min(wake, call.release_at)
            if call.int_repeat_until is not None:
                if t >= call.int_repeat_until:
                    call.int_repeat_until = None
                elif t >= call.int_next:
                    self.kernels.signal(k, signal.SIGINT)
                    call.int_next = t + 0.05
                if call.int_repeat_until is not None:
                    wake = min(wake, call.int_next)
            self.loop.poll(max(0.0, wake - t))
        if call.end is None:
            call.end = now()
        self.meter.stop(call)
        call.mark("kernel_done")

    def _stretch(self, call):
        """At the deadline: move it by the time the code has waited for a CPU since it was
        sent (beyond what moved it already), within STRETCH_MAX times the timeout, and tell
        Airlock ("stretch" frame, ms); whether it moved."""
        k = call.kernel
        if call.waited0 is None or k.pid is None:
            return False
        waited = proc.run_delay(k.pid)
        if waited is None:
            return False
        grant = min(waited - call.waited0, STRETCH_MAX * call.timeout_s) - call.stretched
        if grant < STRETCH_MIN_S:
            return False
        call.stretched += grant
        call.deadline += grant
        self.link.emit({"t": "stretch", "id": call.id, "ms": int(grant * 1000)})
        return True

    def on_message(self, k, msg):
        """What kernel k said: only the running call's messages count (its seq; a done
        also its token)."""
        call = self.call_of(k)
        if call is None or msg.get("seq") != call.seq or call.kdone is not None:
            return  # not this call's: a kernel only ever speaks for its current call
        if msg.get("t") == "done" and msg.get("token") != call.token:
            return  # not written by the kernel's reporting code
        if msg.get("t") == "done":
            # The code is over: what it wrote goes out with the done frame (_report).
            call.release_at = None
            self.link.hold()
        marks = output_marks(msg)
        if marks is None:
            call.output.drain_available()
            call.output.flush_pending()
        else:
            # Exactly what the code wrote before this message goes before it; what it wrote
            # after (already in the pipe or read) follows it.
            call.output.flush_to(marks)
        t = msg.get("t")
        if t == "display":
            self._display(call, msg.get("data"), call.notebook and msg.get("result") is True)
        elif t == "figure":
            data = msg.get("data")
            if isinstance(data, str):
                try:
                    call.figures.append(base64.b64decode(data, validate=True))
                except ValueError:
                    pass
        elif t == "clear_output":
            self.link.emit({"t": "clear_output", "id": call.id, "wait": msg.get("wait") is True})
        elif t == "input_request" and call.ask:
            call.inputs_waiting += 1
            self.link.emit({"t": "input_request", "id": call.id, "prompt": str(msg.get("prompt", ""))[:MAX_PROMPT],
                            "password": msg.get("password") is True})
        elif t == "done":
            call.kdone = msg
            call.end = now()

    def _display(self, call, data, result):
        if not isinstance(data, dict):
            return
        data = {str(m): v for m, v in data.items() if isinstance(v, str)}
        call.display_bytes += sum(len(v) for v in data.values())
        if call.display_bytes > call.hard:
            self.over_limit(call, "display")
        elif data:
            self.link.emit({"t": "display", "id": call.id, "data": data, "result": result})

    def answer_input(self, value):
        """The input_reply op: hand value to the running call's input(), if it waits in
        one (it asked and was not answered yet); whether it did."""
        call = self.call
        if call is None or not call.inputs_waiting or not call.running():
            return False
        call.inputs_waiting -= 1
        return call.output.answer(value)

    def over_limit(self, call, stream):
        """A stream passed the hard output limit: stop the code."""
        if call.verdict is None:
            call.verdict = "output_limit"
            call.message = "%s passed the hard output limit of %d bytes" % (stream, call.hard)
            self.stop_kernel(call)

    def stop_kernel(self, call):
        """Timeout / output limit: SIGINT, and SIGKILL 500 ms later (a session's kernel or
        shell), else SIGKILL at once."""
        if not call.running():
            return
        if call.kind in ("session", "shell"):
            self.kernels.signal(call.kernel, signal.SIGINT)
            call.hard_kill_at = now() + SESSION_KILL_GRACE_S
        else:
            self.kernels.kill(call.kernel)

    def interrupt(self):
        """The interrupt op: SIGINT to the running call's kernel group; whether one ran."""
        call = self.call
        running = call is not None and call.kernel.dead is None
        if running:
            call.int_sent = True
            self.kernels.signal(call.kernel, signal.SIGINT)
            if now() - call.start < INT_WINDOW_S:
                call.int_repeat_until = call.start + INT_WINDOW_S
                call.int_next = now() + 0.05
        return running

    def end_by_restart(self):
        """A restart op during a session call: the call ends now (its kernel killed);
        returns whether there was one."""
        call = self.call
        if call is None or call.mode != "session":
            return False
        call.verdict = call.verdict or "interrupted"
        call.message = call.message or "the kernel was restarted"
        call.restart_op = True
        self.kernels.kill(call.kernel)
        return True

    # --- end ------------------------------------------------------------------------
    def _end(self, call):
        call.output.close_inputs()
        # Leftover processes hold the pipes open: kill them, then drain to EOF. A one-shot
        # call that left nothing but its stopped kernel is answered before that kill.
        later = call.kind == "oneshot" and self._nothing_left(call)
        if not later:
            self._cleanup(call)
        call.mark("killed")
        call.output.drain()
        call.mark("eof")
        self.call = None
        self._report(call)
        t = now()
        if call.kind == "oneshot":
            # Every thread of the kernel seen stopped (asked after the reply, before the
            # kill): none of them can still finish a system call.
            settled = later and self._settled(call.kernel)
            if later:
                self._retire(call.kernel)
            # A thread of the killed kernel may still finish a system call (a file made,
            # an IPC object): unless each was seen stopped, the files are emptied once the
            # zygote has reported its exit.
            if self.kernels.retired and not settled:
                self.kernels.wait_retired()
                self.reap()
            self.clean_files()
            t2 = now()
            self.kernels.refill()
            # Nothing of the call runs and its files are gone: the owner's next call
            # finds its spare armed (not beside a session's processes). Not after a
            # shell call, whose owner's next call is likely a shell call too: that
            # would kill the armed spare, and each kill costs a fork.
            if call.lang != "shell" and self.session.kernel is None and not self.session.count:
                self.kernels.prearm()
            self.after = {"after_clean": t2 - t, "after_refill": now() - t2}
        elif call.kind == "tool":
            self.kernels.refill()
        elif call.kind == "session" and call.kernel.dead is not None:
            self.session.replace()

    def _nothing_left(self, call):
        """Whether a one-shot Python call whose kernel answered left nothing but that
        kernel, which no longer holds its output pipes: then the kernel's kill, and its
        exit (the teardown of a large address space, on the path until now), can follow
        the reply. Every process is stopped and /proc listed as in _cleanup; the kernel
        wrote its last output and put /dev/null over its stdio before it answered, so
        every pipe is at EOF unless its code kept a copy of one (then False: _cleanup
        kills it and drains as before). The kernel stays stopped until _retire."""
        k = call.kernel
        if call.kdone is None or k.dead is not None or k.direct is not None or k.pid is None:
            return False
        self.kernels.wait_forks()
        also, _, thaw = self._kept()
        cleanup.stop_all()
        if not cleanup.only(lambda: self.kernels.protected(also=also), k.pid, k.pidfd):
            return False
        call.output.drain_available()
        if call.output.pipes:
            return False
        cleanup.resume(thaw)
        call.mark("no_leftovers")
        return True

    def _kept(self):
        """(also, keep, thaw) of a one-shot call's teardown: the kernels protected beside
        the spares (a session's, should one-shot and session calls ever share a container),
        the pids no cleanup kills, and those that run again after it (a stopped session
        kernel stays stopped)."""
        also = [self.session.live()]
        keep = self.kernels.protected(also=also)
        thaw = keep - {self.session.pid()} if self.session.stopped else keep
        return also, keep, thaw

    def _settled(self, k):
        """Whether every thread of the stopped kernel k is seen stopped, asked for up to
        SETTLE_S (each thread stops once it gets a CPU after the stop)."""
        end = now() + SETTLE_S
        while not proc.stopped(k.pid):
            if now() >= end:
                return False
            time.sleep(SETTLE_NAP_S)
        return True

    def _retire(self, k):
        """After the reply: kill a one-shot call's stopped kernel (_nothing_left); the next
        call waits for its exit (wait_retired)."""
        self.kernels.kill(k, {"message": "done", "exit_code": 0, "retired": True})
        self.kernels.retired.append(k)

    def _cleanup(self, call):
        """After the call's code: a one-shot call leaves no process (its kernel retired); a
        session call leaves what it had (its snapshot) and the session kernel, stopped
        unless the call asked for background; a tool's kernel goes and the session's
        processes run again as they did before it."""
        k = call.kernel
        if call.kind in ("oneshot", "tool") and k.dead is None:
            self.kernels.kill(k, {"message": "done", "exit_code": 0, "retired": True})
        if call.kind == "oneshot" and k.direct is None and k.pid is not None:
            self.kernels.retired.append(k)  # the next call waits for its exit (wait_retired)
        if call.kind == "oneshot":
            call.mark("retired")
            # Every spare asked for has its pid first (the call did not wait for the
            # refill's fork): a spare still forking would be neither kept nor listed.
            self.kernels.wait_forks()
            call.mark("forks")
            also, keep, thaw = self._kept()
            call.mark("kept")
            if k.direct is None:
                cleanup.stop_all()
            if k.direct is None and cleanup.only(lambda: self.kernels.protected(also=also), k.pid, k.pidfd):
                # Nothing but the controller, the zygote, the spares and the kernel just
                # given SIGKILL: no process of the call is left and none can appear; the
                # sweep's /proc scan (a read right after the kill waits for the kernel's
                # exit) and its wait are skipped. What we keep runs again.
                cleanup.resume(thaw)
                call.mark("no_leftovers")
                return
            # A direct shell's pid was reaped already and may be a leftover's now.
            cleanup.sweep(dict.fromkeys(keep), thaw, dead=() if k.direct is not None else (k.pid,), reap=self.reap)
        elif call.kind == "tool":
            self.session.sweep(call.snapshot, run_kernel=not self.session.stopped, dead=(k.pid,))
        elif call.req.get("background"):
            self.session.resume()
        else:
            n = self.session.sweep(call.snapshot, run_kernel=False)
            if self.session.quick:
                call.mark("no_leftovers")
            if n and not (call.kind == "session" and k.dead is not None):
                call.warnings.append("killed %d process(es) left running by the call" % n)

    def _report(self, call):
        status, code, error, message = outcome(call, proc.oom_kills)
        if call.stretched >= STRETCH_MIN_S:
            call.warnings.append("timeout extended by %d ms: the code waited that long for a CPU "
                                 "(a busy machine, or its cpus limit)" % int(call.stretched * 1000))
        if call.kind == "oneshot":
            self.artifacts.forget()
        artifacts = self.artifacts.collect(call.req, call.figures, call.warnings)
        call.mark("collected")
        restarted = call.restarted or call.restart_op or (call.kind == "session" and call.kernel.dead is not None)
        done = {"t": "done", "id": call.id, "status": status, "exit_code": code, "error": error,
                "execution_count": self.session.count if call.mode == "session" else 1,
                "duration_ms": round((call.end - call.start) * 1000, 3),
                "artifacts": artifacts, "warnings": capped(call.warnings),
                "kernel_restarted": bool(restarted), "message": message,
                "dropped": {"stdout": 0, "stderr": 0}}
        cpu = self.meter.call_cpu(call)
        if cpu is not None:
            done["cpu_seconds"] = round(cpu, 6)
        if call.unpack is not None:
            done["archive"] = call.unpack
        if TRACE:
            done["trace"] = {name: round((t - call.t_recv) * 1000, 3) for name, t in call.marks}
            for name, secs in self.after.items():
                done["trace"]["prev_" + name] = round(secs * 1000, 3)
        self.link.emit(done)
        self.link.release()
