"""Controller side of the session kernel's Jupyter operations: introspection
(complete, inspect, is_complete) and input() answered by Airlock.

- {"op": "introspect", "what", "code", "cursor_pos", "detail_level"} runs in the session
  kernel (adopted from the spares if the session has none yet) like a call without pipes;
  done carries "reply": the kernel's answer, a JSON object of at most MAX_REPLY bytes.
- During a session exec sent with "allow_stdin": true the kernel's input() sends
  {"t": "input_request", "prompt", "password"}; the controller forwards it as a frame with
  the exec's id and remembers that the call waits. {"op": "input_reply", "value"} (answered
  at once, even while the exec runs) hands the value to the waiting kernel; done carries
  "taken": whether a call was waiting.
See images/python/PROTOCOL.md.
"""

import json
import time

import airlock_wire as wire

INTROSPECT_S = 15.0
MAX_REPLY = 512 << 10


def introspect(ctl, req, call_cls):
    """Answer an introspect request from the session kernel (queued like an exec)."""
    rid = req.get("id")
    if ctl.session is None:
        ctl.session = ctl.take_spare()  # session_lost stays: the next exec still reports it
    k = ctl.session
    while k.pid is None and k.dead is None:
        ctl.poll(0.05)
    ctl.seq += 1
    call = call_cls(dict(req, mode="session"), k, ctl.seq)
    msg = {"op": "introspect", "seq": call.seq, "what": str(req.get("what") or ""),
           "code": str(req.get("code") or ""), "cursor_pos": req.get("cursor_pos"),
           "detail_level": req.get("detail_level") or 0}
    ctl.call = call
    try:
        if k.dead is None and k.sock is not None:
            wire.send(k.sock, msg)
            end = time.monotonic() + INTROSPECT_S
            while call.kdone is None and k.dead is None and time.monotonic() < end:
                ctl.poll(min(0.25, max(0.0, end - time.monotonic())))
    except OSError:
        pass
    finally:
        ctl.call = None
    if call.kdone is None and k.dead is None:
        # Stuck (user code can replace what answers): a kernel that cannot take the next
        # call is replaced, as after a timeout; the next exec reports kernel_restarted.
        ctl.kill_kernel(k, {"message": "the kernel did not answer an introspection", "exit_code": 137})
    if k.dead is not None:
        ctl.session = None  # the next exec adopts a spare and reports kernel_restarted
        ctl.session_lost = True
    reply = (call.kdone or {}).get("reply")
    if not isinstance(reply, dict):
        return ctl.emit({"t": "done", "id": rid, "fail": "introspect: the kernel did not answer"})
    if len(json.dumps(reply)) > MAX_REPLY:
        return ctl.emit({"t": "done", "id": rid, "fail": "introspect: the kernel's answer is over %d bytes" % MAX_REPLY})
    return ctl.emit({"t": "done", "id": rid, "reply": reply})


def input_request(ctl, call, msg):
    """The running call's kernel waits in input(): tell Airlock."""
    call.waiting_input = True
    ctl.emit({"t": "input_request", "id": call.id, "prompt": str(msg.get("prompt", ""))[:4096],
              "password": bool(msg.get("password"))})


def input_reply(ctl, req):
    """Hand Airlock's answer to the kernel waiting in input(), if one is."""
    call = ctl.call
    taken = (call is not None and getattr(call, "waiting_input", False) and call.kernel.dead is None
             and call.kernel.sock is not None)
    if taken:
        call.waiting_input = False
        try:
            wire.send(call.kernel.sock, {"op": "input_reply", "seq": call.seq, "value": str(req.get("value", ""))})
        except OSError:
            taken = False
    ctl.emit({"t": "done", "id": req.get("id"), "taken": taken})
