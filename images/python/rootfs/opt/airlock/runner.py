"""Airlock's in-container runner: a resident interpreter driven over stdin.

Requests arrive one JSON object per line on stdin. User output goes to the
container's real stdout/stderr, which Airlock reads and caps. When a request is
finished the runner writes a marker line to stdout:

    \\x1e\\x1eAIRLOCK <json>\\n

where <json> carries the request id and the outcome. Airlock ignores markers
whose id it did not send. Operations: exec (python or shell), put, get, ping.
Files are opened one path component at a time with O_NOFOLLOW relative to an
already-open directory, so a symlink can never lead outside the work folder,
even if it is swapped in while a file is being read.
"""

import ast
import base64
import hashlib
import io
import json
import mimetypes
import os
import signal
import stat
import subprocess
import sys
import time
import traceback

MARK = "\x1e\x1eAIRLOCK "
MAX_WARNINGS = 20
WORK = os.environ.get("AIRLOCK_WORK", "/work")
OUTPUTS = os.path.join(WORK, "outputs")

_real_stdout = sys.stdout
_namespace = {"__name__": "__main__", "__builtins__": __builtins__}
_figures = []  # PNG bytes captured by plt.show() during the current call
_reported = {}  # outputs path -> (mtime_ns, size) already returned


def _reply(msg):
    """Flush user output, then write one marker line."""
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:
            pass
    _real_stdout.write(MARK + json.dumps(msg, separators=(",", ":")) + "\n")
    _real_stdout.flush()


def _oom_kills():
    """Count of OOM kills in this container's memory cgroup (v1 or v2)."""
    for path, key in (("/sys/fs/cgroup/memory.events", "oom_kill"),
                      ("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill")):
        try:
            with open(path) as f:
                for line in f:
                    k, _, v = line.partition(" ")
                    if k == key:
                        return int(v)
        except (OSError, ValueError):
            continue
    return 0


def _patch_pyplot():
    """Make plt.show() capture open figures as PNG artifacts."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None or getattr(plt, "_airlock_patched", False):
        return
    def show(*args, **kwargs):
        _capture_figures(plt)
    plt.show = show
    plt._airlock_patched = True


def _capture_figures(plt):
    for num in list(plt.get_fignums()):
        fig = plt.figure(num)
        buf = io.BytesIO()
        try:
            fig.savefig(buf, format="png", dpi=100)
            _figures.append(buf.getvalue())
        except Exception as exc:  # a broken figure must not break the call
            print("airlock: could not render figure %s: %s" % (num, exc), file=sys.stderr)
        plt.close(fig)


def _run_python(code):
    """Run code like a notebook cell; the last expression's repr is printed."""
    tree = ast.parse(code, "<cell>", "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<cell>", "exec"), _namespace)
    if last is not None:
        value = eval(compile(last, "<cell>", "eval"), _namespace)
        if value is not None:
            print(repr(value))


def _python(code):
    status, exit_code = "ok", 0
    try:
        _run_python(code)
    except KeyboardInterrupt:
        status, exit_code = "interrupted", 130
    except SystemExit as exc:
        c = exc.code
        exit_code = c if isinstance(c, int) else (0 if c is None else 1)
        if not isinstance(c, int) and c is not None:
            print(c, file=sys.stderr)
        status = "ok" if exit_code == 0 else "error"
    except BaseException:
        etype, value, tb = sys.exc_info()
        while tb is not None and tb.tb_frame.f_code.co_filename != "<cell>":
            tb = tb.tb_next
        traceback.print_exception(etype, value, tb, file=sys.stderr)
        status, exit_code = "error", 1
    return status, exit_code


def _shell(code):
    proc = subprocess.Popen(["/bin/bash", "-c", code], stdin=subprocess.DEVNULL,
                            start_new_session=True, cwd=WORK if os.path.isdir(WORK) else "/tmp")
    try:
        rc = proc.wait()
    except KeyboardInterrupt:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
        return "interrupted", 130
    if rc < 0:
        rc = 128 - rc
    return ("ok" if rc == 0 else "error"), rc


def _open_dir(parts, create=False):
    """Open WORK/parts... as a directory fd, never following a symlink."""
    fd = os.open(WORK, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for p in parts:
            if create:
                try:
                    os.mkdir(p, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            nfd = os.open(p, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nfd
        return fd
    except BaseException:
        os.close(fd)
        raise


def _split(path):
    if path.startswith(WORK + "/"):
        path = path[len(WORK) + 1:]
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or path.startswith("/") or ".." in parts:
        raise ValueError("path must be relative to %s without '..': %r" % (WORK, path))
    return parts


def _read_file(dfd, name, max_bytes):
    """Read a regular file relative to dfd without following symlinks."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file: %s" % name)
        if st.st_size > max_bytes:
            raise ValueError("file is %d bytes, over the %d-byte limit" % (st.st_size, max_bytes))
        chunks, total = [], 0
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            total += len(b)
            if total > max_bytes:
                raise ValueError("file grew over the %d-byte limit" % max_bytes)
            chunks.append(b)
        return b"".join(chunks), st
    finally:
        os.close(fd)


def _artifact(name, data, mime):
    return {"name": name, "mime": mime, "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "data": base64.b64encode(data).decode("ascii")}


def _collect_outputs(max_count, max_bytes, out, warnings):
    """Files new or changed under WORK/outputs, read without following symlinks."""
    try:
        root = _open_dir(["outputs"])
    except OSError:
        return
    stack = [(root, "")]
    try:
        while stack:
            dfd, prefix = stack.pop()
            try:
                names = sorted(os.listdir(dfd))
            except OSError:
                names = []
            for n in names:
                rel = prefix + n
                try:
                    st = os.stat(n, dir_fd=dfd, follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    try:
                        stack.append((os.open(n, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dfd), rel + "/"))
                    except OSError:
                        pass
                    continue
                if not stat.S_ISREG(st.st_mode):
                    warnings.append("skipped outputs/%s: not a regular file" % rel)
                    continue
                key = (st.st_mtime_ns, st.st_size)
                if _reported.get(rel) == key:
                    continue
                if len(out) >= max_count:
                    warnings.append("skipped outputs/%s: artifact count limit %d reached" % (rel, max_count))
                    continue
                used = sum(a["size"] for a in out)
                try:
                    data, st2 = _read_file(dfd, n, max_bytes - used)
                except (OSError, ValueError) as exc:
                    warnings.append("skipped outputs/%s: %s" % (rel, exc))
                    continue
                _reported[rel] = (st2.st_mtime_ns, st2.st_size)
                mime = mimetypes.guess_type(n)[0] or "application/octet-stream"
                out.append(_artifact("outputs/" + rel, data, mime))
            if dfd != root:
                os.close(dfd)
    finally:
        os.close(root)


def _exec(req):
    lang = req.get("lang", "python")
    max_count = int(req.get("max_artifacts", 10))
    max_bytes = int(req.get("max_artifact_bytes", 8 << 20))
    if lang not in ("python", "shell"):
        return {"error": "unknown language %r" % lang}
    del _figures[:]
    before = _oom_kills()
    started = time.monotonic()
    # An interrupt (timeout, output flood) may only land in user code; at
    # any other moment it is ignored, so a reply is never cut in half.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        if lang == "python":
            status, code = _python(req.get("code", ""))
        else:
            status, code = _shell(req.get("code", ""))
    except KeyboardInterrupt:
        status, code = "interrupted", 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    elapsed = time.monotonic() - started
    if _oom_kills() > before:
        status = "oom"
    artifacts, warnings = [], []
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        _patch_pyplot()
        _capture_figures(plt)
    for i, png in enumerate(_figures):
        if len(artifacts) >= max_count:
            warnings.append("skipped figure %d: artifact count limit %d reached" % (i + 1, max_count))
        elif sum(a["size"] for a in artifacts) + len(png) > max_bytes:
            warnings.append("skipped figure %d: artifact size limit %d bytes reached" % (i + 1, max_bytes))
        else:
            artifacts.append(_artifact("figure-%d.png" % (i + 1), png, "image/png"))
    del _figures[:]
    _collect_outputs(max_count, max_bytes, artifacts, warnings)
    if len(warnings) > MAX_WARNINGS:
        warnings[MAX_WARNINGS:] = ["... and %d more warnings" % (len(warnings) - MAX_WARNINGS)]
    return {"status": status, "exit_code": code, "artifacts": artifacts,
            "warnings": warnings, "exec_ms": round(elapsed * 1000, 3)}


def _put(req):
    parts = _split(req["path"])
    data = base64.b64decode(req.get("data", ""))
    dfd = _open_dir(parts[:-1], create=True)
    try:
        # O_NONBLOCK: a FIFO planted at the path fails at once instead of
        # blocking; only a regular file is truncated and written.
        fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644, dir_fd=dfd)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ValueError("not a regular file: %s" % req["path"])
            os.ftruncate(fd, 0)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
    finally:
        os.close(dfd)
    return {"size": len(data)}


def _get(req):
    parts = _split(req["path"])
    dfd = _open_dir(parts[:-1])
    try:
        data, _ = _read_file(dfd, parts[-1], int(req.get("max_bytes", 8 << 20)))
    finally:
        os.close(dfd)
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "data": base64.b64encode(data).decode("ascii")}


def _handle(req):
    op = req.get("op")
    if op == "exec":
        return _exec(req)
    if op == "put":
        return _put(req)
    if op == "get":
        return _get(req)
    if op == "ping":
        return {"pong": True}
    return {"error": "unknown op %r" % op}


def main():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.makedirs("/tmp/.mpl", exist_ok=True)
    try:
        os.makedirs(OUTPUTS, exist_ok=True)
    except OSError:
        pass
    if os.path.isdir(WORK):
        os.chdir(WORK)
    sys.path.insert(0, os.getcwd())
    if os.environ.get("AIRLOCK_PRELOAD", "") == "1":
        import numpy  # noqa: F401
        import pandas  # noqa: F401
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401
        _patch_pyplot()
    # Requests keep the original stdin; user code (and its children) read
    # /dev/null, so no program can swallow the next request.
    stdin = os.fdopen(os.dup(0), "rb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(0, "r", closefd=False)
    _reply({"id": "ready", "pid": os.getpid()})
    while True:
        try:
            line = stdin.readline()
        except KeyboardInterrupt:
            continue
        if not line:
            return
        try:
            req = json.loads(line)
        except ValueError as exc:
            _reply({"id": "", "error": "bad request: %s" % exc})
            continue
        try:
            msg = _handle(req)
        except KeyboardInterrupt:
            msg = {"status": "interrupted", "exit_code": 130}
        except Exception as exc:
            msg = {"error": "%s: %s" % (type(exc).__name__, exc)}
        msg["id"] = req.get("id", "")
        _reply(msg)


if __name__ == "__main__":
    main()
