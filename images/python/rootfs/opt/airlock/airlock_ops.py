"""The request ops: which exist, which are answered at once, and how each is handled.

Requests are handled one at a time, in order (QUEUED ops: exec, introspect, restart, put,
get, ls), except those answered as soon as they are read, even while an exec runs
(IMMEDIATE ops: ping, interrupt, stats, input_reply; a restart during a session call also
ends that call at once). Every request gets exactly one done frame; a refused one gets
done with "fail".

Adding an op: a method here (queued, or immediate if it must work during an exec), its
name in the table, its fields in PROTOCOL.md "Wire protocol", the Go side's ctlRequest
and ctlFrame (sandbox/frames.go). An op the kernel must answer between calls (like
introspect: airlock_kernelops.py) also needs a kernel op (kernel.py); see PROTOCOL.md
"Extending".
"""

import base64
import collections
import hashlib

import airlock_files as files
import airlock_proc as proc
from airlock_workspace import CallRefused
from airlock_loop import now


class Ops:
    """The controller's request table."""

    def __init__(self, c):
        self.link, self.runner, self.session = c.link, c.runner, c.session
        self.artifacts, self.work = c.artifacts, c.work
        self.queue = collections.deque()
        self.immediate = {"ping": self.ping, "interrupt": self.interrupt, "stats": self.stats,
                          "input_reply": self.input_reply}
        self.queued = {"exec": self.runner.run, "introspect": c.kernelops.introspect, "restart": self.restart,
                       "put": self.put, "get": self.get, "ls": self.ls, "stage": self.stage}
        self.workspace = c.workspace

    def on_request(self, req):
        """A request as it is read: answered now, or queued."""
        op = req.get("op")
        if op in self.immediate:
            return self.link.emit(dict(self.immediate[op](req), t="done", id=req.get("id")))
        if op == "restart" and self.runner.end_by_restart():
            req["_done_during_call"] = True
        else:
            req["_t_recv"] = now()
        self.queue.append(req)

    def handle(self, req):
        """Run a queued request; a refusal becomes its done with "fail"."""
        op, rid = req.get("op"), req.get("id")
        fn = self.queued.get(op)
        if fn is None:
            return self.link.emit({"t": "done", "id": rid, "fail": "unknown op %r" % op})
        try:
            out = fn(req)
        except (OSError, ValueError, TypeError) as exc:
            msg = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return self.link.emit({"t": "done", "id": rid, "fail": "%s: %s" % (op, msg)})
        if out is not None:
            self.link.emit(dict(out, t="done", id=rid))

    # --- immediate ------------------------------------------------------------------
    def ping(self, _req):
        return {"pong": True}

    def interrupt(self, _req):
        return {"interrupted": self.runner.interrupt()}

    def input_reply(self, req):
        """Airlock's answer to the input() the running call waits in; whether one did."""
        value = req.get("value", "")
        if not isinstance(value, str):
            return {"taken": False, "fail": "input_reply: value must be a string"}
        return {"taken": self.runner.answer_input(value)}

    def stats(self, _req):
        """Processes, CPU and memory of the container (cgroup)."""
        cpu = proc.cgroup_cpu()
        return {"procs": sum(1 for state, _, _ in proc.table().values() if state not in "ZX"),
                "cpu_ms": round(cpu * 1000, 3) if cpu is not None else None, "mem_bytes": proc.cgroup_memory()}

    # --- queued (exec is the call lifecycle's, introspect airlock_kernelops') -----------
    def restart(self, req):
        """Kill the session's kernel and fork a fresh one (files kept)."""
        self.session.restart(ended_call=bool(req.get("_done_during_call")))
        return {"restarted": True}

    def put(self, req):
        """Write a chunk of a file under /work (offset 0 creates or truncates)."""
        if not isinstance(req.get("data", ""), str):
            raise ValueError("data must be base64 text")
        data = base64.b64decode(req.get("data", ""), validate=True)
        st = files.write_file(self.work, req.get("path"), data, int(req.get("offset") or 0))
        self.artifacts.mark("/".join(files.split(self.work, req.get("path"))), st)
        return {"size": st.st_size}

    def stage(self, req):
        """One chunk of a streamed input (airlock_stream.py): {"size"} received so far, or
        a refusal with its core error code (the stream is then dropped)."""
        try:
            return self.workspace.stage(req)
        except CallRefused as exc:
            return {"fail": str(exc), "code": exc.code}

    def get(self, req):
        """Read at most length bytes of a file under /work from offset."""
        length = int(req.get("length") or req.get("max_bytes") or (8 << 20))
        data, size = files.get_chunk(self.work, req.get("path"), int(req.get("offset") or 0), length)
        return {"size": size, "sha256": hashlib.sha256(data).hexdigest(),
                "data": base64.b64encode(data).decode("ascii")}

    def ls(self, req):
        """The entries of a folder under /work."""
        return {"entries": files.list_dir(self.work, req.get("path") or "")}
