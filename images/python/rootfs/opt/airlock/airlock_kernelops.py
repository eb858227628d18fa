"""Questions the session's kernel answers between calls: Jupyter's complete, inspect and
is_complete (issue 31), through the queued "introspect" op.

An introspection runs in the session's kernel (a spare adopted if the session has none
yet, as its first call would, without arming it) the way a call does, without pipes: the
processes are noted, the kernel is resumed (it is stopped between calls without the
background policy), asked with a seq of its own and a fresh token, and waited for at most
INTROSPECT_S. Afterwards the session is left as it was found: if its kernel was stopped,
what the question started meanwhile (user code runs: its threads, the properties Jedi
looks at) is swept and the kernel is stopped again. A kernel that has not answered in time
is interrupted (SIGINT, to the kernel alone): an introspection stops and answers that it
was interrupted, and the session keeps its namespace. One that still has not answered
INTERRUPT_GRACE_S later (user code may replace what answers, and ignore SIGINT) is killed;
the session's next call adopts a spare and reports kernel_restarted. The answer is that
session's own output: the controller checks only that it came with the question's token
and is a JSON object of at most MAX_REPLY bytes. See PROTOCOL.md "Jupyter operations".
"""

import json
import os
import signal

import airlock_wire as wire
from airlock_loop import now

INTROSPECT_S = 15.0  # the first completion imports Jedi
INTERRUPT_GRACE_S = 2.0  # from the interrupt of a question not answered in time to its kill
MAX_REPLY = 512 << 10
WHATS = ("complete", "inspect", "is_complete", "variables")


class Question:
    """One introspection waiting for its kernel's answer."""

    def __init__(self, kernel, seq):
        self.kernel = kernel
        self.seq = seq
        # Only the kernel's own reporting code gets it; never the token of a call.
        self.token = os.urandom(16).hex()
        self.answered = False
        self.reply = None


class KernelOps:
    """The introspect op and the kernel messages that answer it."""

    def __init__(self, loop, kernels, session, next_seq):
        self.loop = loop
        self.kernels = kernels
        self.session = session
        self.next_seq = next_seq  # next_seq(): a seq no call or question has had
        self.question = None

    def introspect(self, req):
        """The queued introspect op: the kernel's reply, or ValueError (the op fails)."""
        what = req.get("what")
        if what not in WHATS:
            raise ValueError("unknown question %r (want one of %s)" % (what, ", ".join(WHATS)))
        cursor, detail = req.get("cursor_pos"), req.get("detail_level")
        msg = {"op": "introspect", "what": what, "code": str(req.get("code") or ""),
               # Airlock leaves out a zero cursor_pos.
               "cursor_pos": cursor if type(cursor) is int else 0,
               "detail_level": detail if type(detail) is int else 0}
        return {"reply": checked(self.ask(msg, INTROSPECT_S))}

    def ask(self, msg, bound):
        """Ask the session's kernel msg (an op it answers between calls) and wait at most
        bound seconds: the Question, answered or not. The kernel is resumed for it and
        left as it was found (stopped and swept if it was stopped); one that did not
        answer in time, even once interrupted, is killed (the next call reports
        kernel_restarted)."""
        k = self.session.kernel_for_question()
        self.kernels.wait_ready(k)
        stopped = self.session.stopped
        snapshot = self.session.processes() if stopped else None  # before the kernel runs again
        self.session.resume()
        q = Question(k, self.next_seq())
        self.question = q
        try:
            self._ask(q, dict(msg, seq=q.seq, token=q.token), bound)
        finally:
            self.question = None
        dead = ()
        if not q.answered and k.dead is None:
            self.kernels.kill(k, {"message": "the kernel did not answer %s" % msg.get("op"), "exit_code": 137})
            dead = (k.pid,)
        if stopped:
            self.session.sweep(snapshot, run_kernel=False, dead=dead)
        return q

    def _ask(self, q, msg, bound):
        """Send the question and wait for its answer or the kernel's death: at most bound,
        then INTERRUPT_GRACE_S more after interrupting the kernel."""
        k = q.kernel
        try:
            if k.dead is not None or k.sock is None:
                return
            wire.send(k.sock, msg)
        except OSError:
            return
        self._wait(q, bound)
        if not q.answered and k.dead is None:
            self.kernels.signal(k, signal.SIGINT, group=False)
            self._wait(q, INTERRUPT_GRACE_S)

    def _wait(self, q, bound):
        end = now() + bound
        while not q.answered and q.kernel.dead is None and now() < end:
            self.loop.poll(max(0.0, end - now()))

    def on_message(self, k, msg):
        """What kernel k said: only the pending question's done, with its token, counts."""
        q = self.question
        if q is None or k is not q.kernel or q.answered or msg.get("seq") != q.seq:
            return
        if msg.get("t") == "done" and msg.get("token") == q.token:
            q.answered, q.reply = True, msg.get("reply")


def checked(q):
    """The reply of an answered question, or ValueError saying why there is none."""
    if not q.answered:
        raise ValueError("the kernel did not answer")
    if not isinstance(q.reply, dict):
        raise ValueError("the kernel's answer is not a JSON object")
    if len(json.dumps(q.reply)) > MAX_REPLY:
        raise ValueError("the kernel's answer is over %d bytes" % MAX_REPLY)
    return q.reply
