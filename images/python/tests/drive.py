#!/usr/bin/env python3
"""Drive /opt/airlock/controller.py in a hardened airlock/python container (manual checks).

    python3 images/python/tests/drive.py            # run every check, print numbers
    python3 images/python/tests/drive.py latency isolation   # run some checks
    python3 images/python/tests/drive.py repl       # type JSON requests, see frames

The container gets the same hardening Airlock uses; the controller code is mounted
from this checkout (images/python/rootfs/opt/airlock), so no image rebuild is needed.
Like Airlock, the driver listens on a link socket of the container's own (a private
folder, bind-mounted at /run/airlock/link.sock), takes the controller's one connection,
removes the socket and speaks the protocol on that connection.
"""

import base64
import json
import os
import queue
import shutil
import socket
import statistics
import tempfile
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
AIRLOCK_DIR = os.path.normpath(os.path.join(HERE, "..", "rootfs", "opt", "airlock"))
IMAGE = os.environ.get("IMAGE", "airlock/python:latest")


LINK_PATH = "/run/airlock/link.sock"


def host_cmd(env=None, link=None):
    """DRIVE_HOST=1: a private pid+mount namespace on the host (no numpy; quick checks only)."""
    envs = " ".join("%s=%s" % kv for kv in dict(env or {}, AIRLOCK_LINK=link).items())
    script = ("mount -t tmpfs tmpfs /tmp && mount -t tmpfs tmpfs /dev/shm && mkdir /tmp/w && chown 10001:10001 /tmp/w"
              " && exec setpriv --reuid 10001 --regid 10001 --clear-groups env AIRLOCK_WORK=/tmp/w MPLCONFIGDIR=/tmp/.mpl "
              + envs + " python3 " + AIRLOCK_DIR + "/controller.py")
    return ["unshare", "--fork", "--pid", "--mount-proc", "--mount", "sh", "-c", script]


def docker_cmd(env=None, name=None, link=None):
    if os.environ.get("DRIVE_HOST"):
        return host_cmd(env, link)
    # No --init: the controller must be pid 1 (Airlock takes the link only from pid 1).
    init = ["--init"] if os.environ.get("DRIVE_INIT") else []
    cmd = ["docker", "run", "--rm"] + init + ["-v", link + ":" + LINK_PATH + ":ro", "-e", "AIRLOCK_LINK=" + LINK_PATH, "--network", "none", "--read-only", "--cap-drop", "ALL",
           "--security-opt", "no-new-privileges", "--user", "10001:10001", "--pids-limit", "128",
           "-m", "512m", "--memory-swap", "512m",
           "--tmpfs", "/tmp:rw,nosuid,nodev,size=64m",
           "--tmpfs", "/work:rw,nosuid,nodev,size=64m,uid=10001,gid=10001",
           "-e", "AIRLOCK_PRELOAD=1", "-v", AIRLOCK_DIR + ":/opt/airlock:ro"]
    if name:
        cmd += ["--name", name]
    for k, v in (env or {}).items():
        cmd += ["-e", "%s=%s" % (k, v)]
    return cmd + [IMAGE, "python3", "/opt/airlock/controller.py"]


class Client:
    """One controller container; frames are sorted per request id by a reader thread."""

    def __init__(self, env=None, name=None):
        self.t_start = time.monotonic()
        # The link: a socket in a private folder; one connection taken, then removed.
        folder = tempfile.mkdtemp(prefix="airlock-drive-link-")
        path = os.path.join(folder, "link.sock")
        ln = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ln.bind(path)
        os.chmod(path, 0o666)
        ln.listen(1)
        ln.settimeout(120)
        self.proc = subprocess.Popen(docker_cmd(env, name, path), stdin=subprocess.DEVNULL)
        try:
            self.sock, _ = ln.accept()
        finally:
            ln.close()
            shutil.rmtree(folder, ignore_errors=True)
        self.sock.settimeout(None)
        self.wfile = self.sock.makefile("wb", buffering=0)
        self.queues = {}
        self.lock = threading.Lock()
        self.n = 0
        self.eof = threading.Event()
        self.ready = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.ready_frame = self.ready.get(timeout=60)
        self.ready_wall_ms = (time.monotonic() - self.t_start) * 1000

    def _q(self, rid):
        with self.lock:
            return self.queues.setdefault(rid, queue.Queue())

    def _read(self):
        f = self.sock.makefile("rb", buffering=1 << 20)
        for line in f:
            m = json.loads(line)
            if m.get("t") == "ready":
                self.ready.put(m)
            else:
                self._q(m.get("id")).put(m)
        self.eof.set()

    def send(self, req):
        self.n += 1
        req.setdefault("id", "r%d" % self.n)
        self._q(req["id"])
        self.wfile.write((json.dumps(req) + "\n").encode())
        return req["id"]

    def wait(self, rid, timeout=60):
        """All frames of a request up to and including its done: (frames, done). The
        started and stretch frames (Airlock's deadline bookkeeping) are left out."""
        q, frames = self._q(rid), []
        end = time.monotonic() + timeout
        while True:
            m = q.get(timeout=max(0.001, end - time.monotonic()))
            if m.get("t") == "done":
                with self.lock:
                    self.queues.pop(rid, None)
                return frames, m
            if m.get("t") not in ("started", "stretch"):
                frames.append(m)

    def call(self, req, timeout=60):
        return self.wait(self.send(req), timeout)

    def exec(self, code, mode="oneshot", **kw):
        req = {"op": "exec", "mode": mode, "lang": kw.pop("lang", "python"), "code": code,
               "timeout_ms": kw.pop("timeout_ms", 30000), "hard_output_bytes": kw.pop("hard", 8 << 20)}
        req.update(kw)
        frames, done = self.call(req, timeout=req["timeout_ms"] / 1000 + 30)
        out = "".join(f["d"] for f in frames if f.get("t") == "out" and f["s"] == "stdout")
        err = "".join(f["d"] for f in frames if f.get("t") == "out" and f["s"] == "stderr")
        disp = [f["data"] for f in frames if f.get("t") == "display"]
        return out, err, done, disp

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
            self.sock.close()
        except OSError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


RESULTS = []


def check(name, cond, detail=""):
    RESULTS.append((name, bool(cond)))
    print("%s %s %s" % ("PASS" if cond else "FAIL", name, detail), flush=True)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


# --- checks ---------------------------------------------------------------------------
def t_boot(c):
    check("ready frame", c.ready_frame.get("t") == "ready" and c.ready_frame.get("pid"),
          "boot_ms=%.0f (controller) wall=%.0f ms (docker run to ready)" % (c.ready_frame["boot_ms"], c.ready_wall_ms))


def t_latency(c, mode="oneshot", n=200):
    lat = []
    for i in range(n):
        t = time.monotonic()
        out, err, done, _ = c.exec("print(1)", mode=mode)
        lat.append((time.monotonic() - t) * 1000)
        if out != "1\n" or done["status"] != "ok":
            check("latency %s call %d" % (mode, i), False, repr((out, err, done)))
            return
    check("latency %s print(1) x%d" % (mode, n), True,
          "p50=%.2f ms p90=%.2f ms p99=%.2f ms max=%.1f ms" % (pct(lat, .5), pct(lat, .9), pct(lat, .99), max(lat)))


def t_isolation(c):
    c.exec("""
import subprocess, os
X = 42
open('/tmp/leak', 'w').write('x'); open('/work/leak', 'w').write('x')
os.system('sleep 1000 &')
subprocess.Popen(['sleep', '1001'], start_new_session=True)
""")
    out, err, done, _ = c.exec("""
import os, subprocess
print('X' in globals(), os.path.exists('/tmp/leak'), os.path.exists('/work/leak'))
print(subprocess.run(['sh', '-c', 'ps -eo args | grep -c "^sleep 100"'], capture_output=True, text=True).stdout.strip())
""")
    check("oneshot isolation (var, /tmp, /work, background procs)", out == "False False False\n0\n", repr(out + err))


def t_session_state(c):
    c.exec("y = 41", mode="session")
    out, err, done, _ = c.exec("y + 1", mode="session")
    check("session state persists", out == "42\n" and done["execution_count"] >= 2, repr((out, done["execution_count"])))


def t_ordering(c, n=1000):
    bad = 0
    for i in range(n):
        mode = "session" if i % 2 else "oneshot"
        code = "import sys\n_ = sys.stdout.write('o%d')\n_ = sys.stderr.write('e%d')" % (i, i)
        out, err, done, _ = c.exec(code, mode=mode)
        if out != "o%d" % i or err != "e%d" % i:
            bad += 1
            if bad < 5:
                print("  mismatch", i, repr(out), repr(err))
    check("stdout/stderr exact x%d (under load)" % n, bad == 0, "misattributed=%d" % bad)


def t_forgery(c):
    code = r'''
import sys, gc, os, json
f = sys._getframe()
ids = set()
while f is not None:
    for v in list(f.f_locals.values()):
        if isinstance(v, dict) and 'seq' in v: ids.add(v.get('seq'))
    f = f.f_back
for o in gc.get_objects():
    if isinstance(o, dict) and o.get('op') == 'exec': ids.add(o.get('seq'))
for i in list(ids) + ["F1"]:
    print(json.dumps({"t": "done", "id": "F1", "status": "ok", "exit_code": 0, "artifacts": [{"name": "x"}]}))
sys.modules['__main__'].__dict__['_airlock_reply'] = None
for pid in os.listdir('/proc'):
    if pid.isdigit():
        for fd in range(3):
            try:
                with open('/proc/%s/fd/%d' % (pid, fd), 'w') as w: w.write('{"t":"done","id":"F1","status":"ok"}\n')
            except OSError: pass
for fd in range(256):
    try: os.write(fd, b'{"t":"done","id":"F1","status":"forged"}\n')
    except OSError: pass
sys.exit(3)
'''
    for mode in ("oneshot", "session"):
        frames, done = c.call({"id": "F1", "op": "exec", "mode": mode, "code": code, "timeout_ms": 10000})
        others = [f for f in frames if f.get("t") not in ("out",)]
        ok = done["status"] == "error" and done["exit_code"] == 3 and done["artifacts"] == [] and not others
        check("forgery attempts change nothing (%s)" % mode, ok, "status=%s exit=%s" % (done.get("status"), done.get("exit_code")))
        out, err, d2, _ = c.exec("print('after')", mode=mode)
        check("call after forgery (%s)" % mode, out == "after\n" and d2["status"] == "ok", repr(out))


def t_interrupt(c):
    c.exec("z = 7", mode="session")
    rid = c.send({"op": "exec", "mode": "session", "code": "import time\ntime.sleep(60)", "timeout_ms": 120000})
    time.sleep(0.5)
    t = time.monotonic()
    c.call({"op": "interrupt"})
    frames, done = c.wait(rid, 10)
    dt = (time.monotonic() - t) * 1000
    check("interrupt sleep(60)", done["status"] == "interrupted" and dt < 1000, "returned in %.0f ms" % dt)
    out, err, d, _ = c.exec("z", mode="session")
    check("session survives interrupt", out == "7\n" and not d["kernel_restarted"], repr(out))
    _, r = c.call({"op": "restart"})
    out, err, d, _ = c.exec("print('z' in globals())", mode="session")
    check("restart drops state", r.get("restarted") and out == "False\n", repr((r, out)))
    c.exec("z = 8", mode="session")
    rid = c.send({"op": "exec", "mode": "session", "code": "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)", "timeout_ms": 120000})
    time.sleep(0.5)
    t = time.monotonic()
    rr = c.send({"op": "restart"})
    frames, done = c.wait(rid, 10)
    _, r = c.wait(rr, 10)
    dt = (time.monotonic() - t) * 1000
    out, err, d, _ = c.exec("print('z' in globals())", mode="session")
    check("restart during an uninterruptible call", done["status"] == "interrupted" and r.get("restarted") and out == "False\n",
          "%.0f ms %r" % (dt, (done["status"], done["message"], out)))


def t_timeout(c):
    for mode in ("oneshot", "session"):
        t = time.monotonic()
        out, err, done, _ = c.exec("while True: pass", mode=mode, timeout_ms=1000)
        dt = (time.monotonic() - t) * 1000
        check("timeout busy loop (%s)" % mode, done["status"] == "timeout" and dt < 2000, "%.0f ms %s %r" % (dt, done["status"], done["message"]))
    # The driver stops reading: the deadline must still hold inside.
    rid = c.send({"op": "exec", "mode": "oneshot", "code": "import sys\nwhile True: sys.stdout.write('x' * 10000)",
                  "timeout_ms": 1000, "hard_output_bytes": 1 << 40})
    t = time.monotonic()
    frames, done = c.wait(rid, 30)
    check("timeout while flooding (not reading)", done["status"] == "timeout",
          "duration_ms=%.0f wall=%.0f ms" % (done["duration_ms"], (time.monotonic() - t) * 1000))


def t_death(c):
    c.call({"op": "put", "path": "keep.txt", "data": base64.b64encode(b"kept").decode()})
    cases = [("os.kill", "import os\nos.kill(os.getpid(), 9)"),
             ("segfault", "import ctypes\nctypes.string_at(0)"),
             ("memory bomb", "a = []\nwhile True: a.append(bytearray(50 << 20))")]
    for name, code in cases:
        c.exec("w = 1", mode="session")
        out, err, done, _ = c.exec(code, mode="session", timeout_ms=30000)
        o2, e2, d2, _ = c.exec("print(open('keep.txt').read(), 'w' in globals())", mode="session")
        check("kernel death: %s" % name,
              done["status"] in ("error", "oom") and done["kernel_restarted"] and o2 == "kept False\n" and d2["status"] == "ok",
              "status=%s message=%r next=%r" % (done["status"], done["message"], o2))


def t_rich(c):
    out, err, done, disp = c.exec("""
import pandas as pd
from PIL import Image
display(Image.new('RGB', (4, 4), 'red'))
pd.DataFrame({'a': [1, 2]})
""")
    html = any("text/html" in d and "<table" in d["text/html"] for d in disp)
    png = any("image/png" in d for d in disp)
    check("rich display (DataFrame html, PIL png)", html and png and "a" in out, "%d bundles" % len(disp))


def t_error(c):
    out, err, done, _ = c.exec("def f():\n    1/0\nf()")
    e = done["error"] or {}
    check("structured error", e.get("name") == "ZeroDivisionError" and "Traceback" in err and
          any("1/0" in l for l in e.get("traceback", [])), repr(e)[:200])
    out, err, done, _ = c.exec("x = (")
    check("syntax error", (done["error"] or {}).get("name") == "SyntaxError", repr(err)[-80:])


def t_misc(c):
    out, err, done, _ = c.exec("    x = 1\n    print(x + 1)")
    check("dedent", out == "2\n", repr(out + err))
    out, err, done, _ = c.exec("import os, sys\nprint(os.environ['FOO'], sys.stdin.read())", env={"FOO": "bar"}, stdin="in put")
    check("env and stdin", out == "bar in put\n", repr(out + err))
    out, err, done, _ = c.exec("echo hi; echo err >&2; exit 3", lang="shell")
    check("shell", out == "hi\n" and err == "err\n" and done["exit_code"] == 3, repr((out, err, done["exit_code"])))
    out, err, done, _ = c.exec("""
import matplotlib.pyplot as plt
plt.plot([1, 2]); plt.savefig('outputs/p.png')
plt.figure(); plt.plot([3, 1])
""")
    names = [a["name"] for a in done["artifacts"]]
    check("figure saved once + unsaved captured", sorted(names) == ["figure-1.png", "outputs/p.png"], repr(names))
    out, err, done, _ = c.exec("""
from PIL import Image
import os
os.makedirs('a/b', exist_ok=True)
Image.new('RGB', (2, 2)).save('a/b/pic.png')
""", mode="session")
    names = [a["name"] for a in done["artifacts"]]
    out, err, d2, _ = c.exec("print(1)", mode="session")
    check("image anywhere under /work returned once", names == ["a/b/pic.png"] and d2["artifacts"] == [],
          repr((names, [a["name"] for a in d2["artifacts"]])))
    out, err, done, _ = c.exec("while True: print('flood' * 20)", hard=200000)
    check("output flood -> output_limit", done["status"] == "output_limit" and len(out) <= 200000,
          "status=%s got=%d" % (done["status"], len(out)))
    _, d = c.call({"op": "ls", "path": ""})
    check("ls", any(e["name"] == "keep.txt" for e in d.get("entries", [])) or "entries" in d, repr(d)[:120])
    _, d = c.call({"op": "get", "path": "../etc/passwd"})
    check("get refuses ..", "fail" in d, repr(d))
    _, d = c.call({"op": "stats"})
    check("stats", d.get("procs", 0) >= 3, repr(d))


def attack(name):
    """A call's code shared with the Go tests (images/python/tests/attacks)."""
    with open(os.path.join(HERE, "attacks", name)) as f:
        return f.read()


# A stand-in for Airlock's file tools (internal/policy's read_file): resolve, check, read.
READ_TOOL = r"""
import os, sys
p = os.path.realpath("/work/passwd_link")
if not p.startswith("/work/"):
    print("REFUSED", p)
    raise SystemExit(3)
print(open(p).read())
"""


def t_hooked(c):
    out, err, done, _ = c.exec(attack("hook_kernel.py"), mode="session")
    check("hook the session kernel", done["status"] == "ok", repr((out, err))[:300])
    out, err, done, _ = c.exec("echo five; exit 5", mode="session", lang="shell")
    check("hooked session: shell exit 5 reported", done["status"] == "error" and done["exit_code"] == 5 and out == "five\n",
          "status=%s exit=%s out=%r" % (done["status"], done["exit_code"], out))
    out, err, done, _ = c.exec("print('seven')\nraise SystemExit(7)  # HOOKVICTIM", mode="session")
    check("hooked session: SystemExit(7) reported", done["status"] == "error" and done["exit_code"] == 7 and out == "seven\n",
          "status=%s exit=%s out=%r" % (done["status"], done["exit_code"], out))
    out, err, done, _ = c.exec(READ_TOOL, mode="session", generated=True)
    check("hooked session: a tool's read of a symlink to /etc/passwd refused", "root:" not in out and done["exit_code"] == 3,
          "exit=%s out=%r" % (done["exit_code"], out[:80]))
    out, err, done, _ = c.exec("print(os.path.realpath('/work/passwd_link'))", mode="session")
    check("hooked session: its own state kept", out == "/work/passwd_link\n", repr(out))
    c.call({"op": "restart"})


def t_ipc(c, n=20):
    bad, t0 = [], time.monotonic()
    for i in range(n):
        out, err, done, _ = c.exec("N = %d\n" % i + attack("fork_bomb_ipc.py"), timeout_ms=20000)
        if out != "[True, True, True, True]\n":
            bad.append((i, "bomb", out, err[-200:]))
            continue
        out, err, done, _ = c.exec(attack("leftovers.py"))
        if out != "0 0 []\n":
            bad.append((i, out))
    check("no IPC object or process crosses one-shot calls (%d fork bombs)" % n, not bad,
          "%.1f s %r" % (time.monotonic() - t0, bad[:3]))


SPIN = "import threading\ndef spin():\n    while True: pass\nthreading.Thread(target=spin, daemon=True).start()"
LATER = """import subprocess, threading, time
def later():
    time.sleep(1)
    subprocess.Popen(["sleep", "4321"], start_new_session=True)
threading.Thread(target=later, daemon=True).start()"""
COUNT_4321 = "import os\nprint(sum(1 for p in os.listdir('/proc') if p.isdigit() and b'4321' in open('/proc/%s/cmdline' % p, 'rb').read()))"


def t_background(c):
    c.call({"op": "restart"})
    c.exec(SPIN, mode="session")
    time.sleep(0.5)
    _, a = c.call({"op": "stats"})
    time.sleep(3)
    _, b = c.call({"op": "stats"})
    used = b["cpu_ms"] - a["cpu_ms"]
    check("session thread uses no CPU between calls (no background policy)", used < 150, "%.0f ms in 3 s" % used)
    out, err, done, _ = c.exec("import threading\nprint(threading.active_count())", mode="session")
    check("the thread runs again in the next call", out == "2\n", repr(out))
    c.call({"op": "restart"})
    c.exec(LATER, mode="session")
    time.sleep(2)
    c.exec("import time\ntime.sleep(1.5)", mode="session")
    out, err, done, _ = c.exec(COUNT_4321, mode="session")
    check("a process a session thread starts after a call's cleanup does not survive", out == "0\n", repr(out))
    c.exec(SPIN, mode="session", background=True)
    time.sleep(0.5)
    _, a = c.call({"op": "stats"})
    time.sleep(1)
    _, b = c.call({"op": "stats"})
    check("with background the thread keeps running", b["cpu_ms"] - a["cpu_ms"] > 50, "%.0f ms in 1 s" % (b["cpu_ms"] - a["cpu_ms"]))
    c.call({"op": "restart"})


def t_jupyter(c):
    """The Jupyter operations (issue 31) on the split controller: introspection in the stopped
    session kernel, input() answered by Airlock, notebook conventions, a stolen question token."""
    c.call({"op": "restart"})
    _, d = c.call({"op": "introspect", "what": "complete", "code": "import js", "cursor_pos": 9})
    check("complete before any call", "json" in d.get("reply", {}).get("matches", []), repr(d)[:200])
    c.exec("x = 5\n" + SPIN, mode="session")
    lat = []
    for _ in range(20):
        t = time.monotonic()
        _, d = c.call({"op": "introspect", "what": "complete", "code": "x.bit_", "cursor_pos": 6})
        lat.append((time.monotonic() - t) * 1000)
    check("complete over the live namespace x20 (a thread spinning in the kernel)", "bit_length" in d.get("reply", {}).get("matches", []),
          "p50=%.1f ms max=%.1f ms" % (pct(lat, .5), max(lat)))
    time.sleep(0.3)
    _, a = c.call({"op": "stats"})
    time.sleep(2)
    _, b = c.call({"op": "stats"})
    check("the kernel is stopped again after introspections", b["cpu_ms"] - a["cpu_ms"] < 100,
          "%.0f ms in 2 s" % (b["cpu_ms"] - a["cpu_ms"]))
    rid = c.send({"op": "exec", "mode": "session", "allow_stdin": True, "notebook": True, "timeout_ms": 30000,
                  "code": "import getpass\na = input('first? ')\nb = getpass.getpass()\nclear_output(wait=True)\na + b"})
    answers = []
    for value in ("a\nb", "cd"):
        for _ in range(200):
            _, d = c.call({"op": "input_reply", "value": value})
            if d.get("taken"):
                break
            time.sleep(0.05)
        answers.append(d.get("taken"))
    frames, done = c.wait(rid)
    kinds = [(f["t"], f.get("prompt", f.get("result"))) for f in frames]
    check("input() and getpass() answered, value as the result", answers == [True, True] and done["status"] == "ok" and
          kinds == [("input_request", "first? "), ("input_request", "Password: "), ("clear_output", None), ("display", True)]
          and frames[-1]["data"]["text/plain"] == repr("a\nbcd"), repr((answers, kinds, done["status"]))[:300])
    rid = c.send({"op": "exec", "mode": "session", "allow_stdin": True, "timeout_ms": 30000, "code": "input('wait? ')"})
    time.sleep(1)
    _, d = c.call({"op": "interrupt"})
    frames, done = c.wait(rid)
    check("an interrupt ends a wait in input()", d.get("interrupted") and done["status"] == "interrupted",
          repr((d, done["status"], done.get("error")))[:200])
    _, d = c.call({"op": "input_reply", "value": "late"})
    out, _, _, _ = c.exec("try:\n    input()\nexcept EOFError:\n    print('eof')", mode="session")
    check("no input crosses calls; input() reads EOF without allow_stdin", d.get("taken") is False and out == "eof\n",
          repr((d, out)))
    out, _, done, _ = c.exec(attack("introspect_thief.py"), mode="session")
    _, d = c.call({"op": "introspect", "what": "complete", "code": "x", "cursor_pos": 1})
    out, err, done, _ = c.exec(attack("introspect_forge.py"), mode="session")
    check("a question's stolen token forges no call's done", done["exit_code"] == 7 and out == "forged\n",
          "status=%s exit=%s out=%r" % (done["status"], done["exit_code"], out))
    c.call({"op": "restart"})


ORDER_CASES = [("print('a'); clear_output(); print('b')", [("out", "a\n"), ("clear_output", None), ("out", "b\n")]),
               ("print('a'); display(1); print('b')", [("out", "a\n"), ("display", "1"), ("out", "b\n")]),
               ("import sys\nprint('a', file=sys.stderr); display(2); print('b')",
                [("err", "a\n"), ("display", "2"), ("out", "b\n")])]


def t_notebook_order(c, n=20):
    """Output before and after a display / clear_output keeps its exact order (the messages
    carry the byte counts written before them)."""
    for code, want in ORDER_CASES:
        bad = []
        for _ in range(n):
            frames, _ = c.call({"op": "exec", "mode": "session", "notebook": True, "timeout_ms": 30000, "code": code})
            got = []
            for f in frames:
                if f["t"] == "out":
                    kind = "out" if f["s"] == "stdout" else "err"
                    if got and got[-1][0] == kind:
                        got[-1] = (kind, got[-1][1] + f["d"])
                    else:
                        got.append((kind, f["d"]))
                elif f["t"] == "display":
                    got.append(("display", f["data"].get("text/plain")))
                else:
                    got.append((f["t"], None))
            if got != want:
                bad.append(got)
        check("exact order x%d: %s" % (n, code.replace("\n", "; ")), not bad, "%d wrong, e.g. %r" % (len(bad), bad[:1]))


MPL_LINK = ("import glob, os\nprint(' '.join('image' if open(p, 'rb').read() == open('/usr/local/share/airlock/mpl/' + "
            "os.path.basename(p), 'rb').read() else 'other' for p in glob.glob('/tmp/.mpl/fontlist-*.json')))")


def t_notebook_libs(c):
    """matplotlib's font cache is the image's (copied into /tmp/.mpl at start and again after
    each one-shot cleanup), and IPython.display (the shim) gives the right mime bundles."""
    links = [c.exec(MPL_LINK)[0].strip() for _ in range(2)]
    check("the image's font cache in /tmp/.mpl, also after a one-shot cleanup",
          links == ["image", "image"], repr(links))
    _, _, done, disp = c.exec("from IPython.display import display, HTML, Markdown\ndisplay(HTML('<b>x</b>'), Markdown('*m*'))",
                              mode="session", notebook=True)
    check("IPython.display shim", done["status"] == "ok" and [d.get("text/html", d.get("text/markdown")) for d in disp]
          == ["<b>x</b>", "*m*"], repr((done["status"], disp))[:300])


def t_pilshow(c):
    for mode in ("oneshot", "session"):
        out, err, done, disp = c.exec("from PIL import Image\nImage.new('RGB', (4, 4), 'red').show()", mode=mode)
        check("PIL Image.show() is a display (%s)" % mode, done["status"] == "ok" and any("image/png" in d for d in disp),
              "%d bundles %r" % (len(disp), err[-200:]))


def t_envstdin(c):
    cases = {"python": ("import os, sys\nprint(os.environ.get('FOO'), repr(sys.stdin.read()))", "bar 'in put'\n", "None ''\n"),
             "shell": ("echo \"${FOO-unset} '$(cat)'\"", "bar 'in put'\n", "unset ''\n")}
    for mode in ("oneshot", "session"):
        for lang, (code, want, after) in cases.items():
            out, err, done, _ = c.exec(code, mode=mode, lang=lang, env={"FOO": "bar"}, stdin="in put")
            out2, err2, _, _ = c.exec(code, mode=mode, lang=lang)
            check("env and stdin (%s %s), gone after" % (mode, lang), out == want and out2 == after, repr((out, err, out2, err2)))


def t_eof():
    name = "airlock-drive-eof-%d" % os.getpid()
    c = Client(name=name)
    c.exec("import subprocess\nsubprocess.Popen(['sleep', '1000'], start_new_session=True)", mode="session", background=True)
    # Simulate the driver's death: its end of the link closes (as on kill -9).
    t = time.monotonic()
    c.sock.shutdown(socket.SHUT_RDWR)  # the reader thread's file keeps the fd itself open
    c.sock.close()
    while time.monotonic() - t < 10:
        r = subprocess.run(["docker", "ps", "-q", "--filter", "name=" + name], capture_output=True, text=True)
        if not r.stdout.strip():
            break
        time.sleep(0.1)
    dt = time.monotonic() - t
    check("link EOF (the driver gone) -> container gone", dt < 3, "%.2f s" % dt)


def t_maxlife(life=30):
    # Life counts from the controller's start; preload takes a few seconds of it (more than
    # ten on a machine whose cores are busy), so the life leaves room for the ready frame.
    t = time.monotonic()
    c = Client(env={"AIRLOCK_MAX_LIFE_S": str(life)})
    c.eof.wait(life + 10)
    dt = time.monotonic() - t
    check("AIRLOCK_MAX_LIFE_S=%d honoured" % life, c.eof.is_set() and life - 1 < dt < life + 2.5,
          "stdout closed %.1f s after docker run" % dt)
    c.close()


def burner():
    """A CPU-burning container beside the one under test."""
    return subprocess.Popen(["docker", "run", "--rm", "--network", "none", "--name", "airlock-drive-burn-%d" % os.getpid(),
                             IMAGE, "python3", "-c", "while True: pass"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


ALL = ["boot", "latency", "isolation", "session", "forgery", "interrupt", "timeout", "death", "rich", "error", "misc",
       "hooked", "ipc", "background", "jupyter", "pilshow", "envstdin", "ordering", "notebook_order", "notebook_libs", "eof", "maxlife"]


def main(argv):
    if argv[:1] == ["repl"]:
        c = Client()
        print(c.ready_frame)
        for line in sys.stdin:
            rid = c.send(json.loads(line))
            frames, done = c.wait(rid, 600)
            for f in frames + [done]:
                print(json.dumps(f)[:2000])
        return 0
    which = argv or ALL
    c = Client()
    try:
        for name in which:
            if name == "boot":
                t_boot(c)
            elif name == "latency":
                t_latency(c, "oneshot")
                t_latency(c, "session")
            elif name == "isolation":
                t_isolation(c)
            elif name == "session":
                t_session_state(c)
            elif name == "forgery":
                t_forgery(c)
            elif name == "interrupt":
                t_interrupt(c)
            elif name == "timeout":
                t_timeout(c)
            elif name == "death":
                t_death(c)
            elif name == "rich":
                t_rich(c)
            elif name == "error":
                t_error(c)
            elif name == "misc":
                t_misc(c)
            elif name == "jupyter":
                t_jupyter(c)
            elif name == "notebook_order":
                t_notebook_order(c)
            elif name == "notebook_libs":
                t_notebook_libs(c)
            elif name == "hooked":
                t_hooked(c)
            elif name == "ipc":
                t_ipc(c)
            elif name == "background":
                t_background(c)
            elif name == "pilshow":
                t_pilshow(c)
            elif name == "envstdin":
                t_envstdin(c)
            elif name == "ordering":
                b = burner()
                try:
                    time.sleep(1)
                    t_ordering(c)
                finally:
                    subprocess.run(["docker", "kill", "airlock-drive-burn-%d" % os.getpid()], capture_output=True)
                    b.wait()
            elif name == "eof":
                t_eof()
            elif name == "maxlife":
                t_maxlife()
    finally:
        c.close()
    failed = [n for n, ok in RESULTS if not ok]
    print("%d checks, %d failed %s" % (len(RESULTS), len(failed), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
