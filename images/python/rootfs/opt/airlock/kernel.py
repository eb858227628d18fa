"""Airlock kernel: a child forked by the zygote that runs user code, one call at a time.

The controller sends {"op": "exec", "seq", "lang", "code", "env", "stdin"} with the call's
stdout, stderr (and stdin) fds on the kernel's control socket. The kernel puts them on
fds 1, 2 (0), runs the cell, flushes, puts /dev/null back on 0/1/2, closes the call's fds
and sends {"t": "done", "seq", ...}. Display items and captured figures are sent on the
same socket while the call runs. Nothing the kernel says is trusted beyond "this call's
own output": the controller decides status, timing and artifacts from what it observes.
"""

import ast
import base64
import builtins
import ctypes
import importlib.abc
import io
import linecache
import os
import signal
import subprocess
import sys
import textwrap
import traceback
import types

import airlock_introspect
import airlock_wire as wire

WORK = os.environ.get("AIRLOCK_WORK", "/work")
PR_SET_DUMPABLE = 4
_OUR_MODULES = ("kernel", "zygote", "airlock_wire", "airlock_files", "airlock_introspect")


def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


class Kernel:
    """One interpreter's user namespace and the loop serving calls on its control socket."""

    def __init__(self, sock):
        self.sock = sock
        self.reader = wire.Reader(sock)
        self.main = types.ModuleType("__main__")
        self.main.__dict__["__builtins__"] = builtins
        self.main.__dict__["display"] = self.display
        builtins.display = self.display  # also for the user's own modules, as in IPython
        builtins.clear_output = self.clear_output
        self.notebook = False  # the call's "notebook" flag: see run_python and capture_figures
        self.ns = self.main.__dict__
        self.count = 0
        self.seq = None
        self.figures = 0
        self.libc = _libc()

    # --- messages to the controller -------------------------------------------------
    def _send(self, obj):
        obj["seq"] = self.seq
        try:
            wire.send(self.sock, obj)
        except OSError:
            os._exit(70)

    def _flush(self):
        for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                if s is not None:
                    s.flush()
            except Exception:
                pass
        if self.libc is not None:
            try:
                self.libc.fflush(None)
            except Exception:
                pass

    def display(self, *objs, **_kw):
        """Show objects as rich output (mime bundles), like IPython's display()."""
        for obj in objs:
            self._flush()
            self._send({"t": "display", "data": mime_bundle(obj)})

    def clear_output(self, wait=False):
        """Clear the cell's output so far (at once, or with wait=True when the next output
        arrives), like IPython.display.clear_output; only notebook front ends show it."""
        self._flush()
        self._send({"t": "clear_output", "wait": bool(wait)})

    def warm_up(self):
        """Run the call path once on /dev/null before any call, so the copy-on-write page
        faults and first-use costs of a fresh fork are paid ahead of the call."""
        ns = {"__name__": "__warmup__", "__builtins__": builtins}
        try:
            code = textwrap.dedent("  x = [i for i in range(3)]\n  print(x)\n  x\n")
            tree = ast.parse(code, "<warmup>", "exec")
            last = ast.Expression(tree.body.pop().value)
            exec(compile(tree, "<warmup>", "exec"), ns)
            repr(eval(compile(last, "<warmup>", "eval"), ns))
            wire.json.loads(wire.json.dumps({"t": "done", "seq": 0, "error": None}))
            sys.stdin = open(0, "r", closefd=False)
            self._flush()
            plt = sys.modules.get("matplotlib.pyplot")
            if plt is not None:
                plt.get_fignums()
        except Exception:
            pass

    def arm(self):
        """Turn a waiting spare into the kernel of its first call: drop the signals other
        calls sent it while it waited (blocked since the fork), make it dumpable (user code
        owns its /proc/self, as in a normal python), raise its oom_score_adj to 1000 (the
        OOM killer picks a kernel, not the controller), put /work first on sys.path and
        make it the cwd, then unblock signals. Nothing of the previous call's is alive or
        left in /work by now: the controller killed and cleaned up before sending this."""
        try:
            while True:
                pending = signal.sigpending()
                if not pending or signal.sigtimedwait(pending, 0) is None:
                    break
        except OSError:
            pass
        if self.libc is not None:
            self.libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        try:
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("1000")
        except OSError:
            pass
        sys.path.insert(0, WORK)
        try:
            os.chdir(WORK)
        except OSError:
            pass
        signal.pthread_sigmask(signal.SIG_SETMASK, ())

    # --- the serve loop -------------------------------------------------------------
    def serve(self):
        null = os.open(os.devnull, os.O_RDWR)
        while True:
            msg = self.reader.recv()
            if msg is None:
                os._exit(0)
            nfds = int(msg.get("nfds", 0))
            fds = self.reader.take_fds(nfds)
            if msg.get("op") == "introspect" and not fds:  # complete/inspect/is_complete
                self.seq = msg.get("seq")
                self._send({"t": "done", "reply": airlock_introspect.answer(msg, self.ns)})
                continue
            if msg.get("op") != "exec" or len(fds) != nfds:
                for fd in fds:
                    os.close(fd)
                continue
            if self.count == 0:
                self.arm()
            self.seq = msg.get("seq")
            os.dup2(fds[0], 1)
            os.dup2(fds[1], 2)
            os.dup2(fds[2] if len(fds) > 2 else null, 0)
            for fd in fds:
                os.close(fd)
            sys.stdin = open(0, "r", closefd=False)
            result = self.call(msg)
            self._flush()
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            self._send(dict(result, t="done"))

    def call(self, msg):
        env = msg.get("env") or {}
        saved = {k: os.environ.get(k) for k in env}
        try:
            os.environ.update({str(k): str(v) for k, v in env.items()})
        except Exception:
            pass
        self.count += 1
        self.figures = 0
        self.notebook = bool(msg.get("notebook"))
        status, code, error = "error", 1, None
        try:
            # SIGINT (interrupt, timeout) may only land while the call runs; a second
            # one during the cleanup below is swallowed by the outer handler.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            try:
                if msg.get("lang") == "shell":
                    status, code, error = self.run_shell(msg.get("code", ""))
                elif msg.get("allow_stdin"):  # input() asks Airlock (Jupyter's stdin channel)
                    with airlock_introspect.StdinHooks(self):
                        status, code, error = self.run_python(msg.get("code", ""))
                else:
                    status, code, error = self.run_python(msg.get("code", ""))
                self.capture_figures()
            finally:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
        except KeyboardInterrupt:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            status, code = "interrupted", 130
        finally:
            close_figures()
            if msg.get("mode") == "session":
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
        return {"status": status, "exit_code": code, "error": error, "execution_count": self.count}

    # --- python ---------------------------------------------------------------------
    def run_python(self, code):
        name = "<cell-%d>" % self.count
        code = textwrap.dedent(code)
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        try:
            tree = ast.parse(code, name, "exec")
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            compiled = compile(tree, name, "exec")
            compiled_last = compile(last, name, "eval") if last is not None else None
            sys.modules["__main__"] = self.main
            exec(compiled, self.ns)
            if compiled_last is not None:
                value = eval(compiled_last, self.ns)
                if value is not None:
                    self.ns["_"] = value
                    if self.notebook:  # the value is the cell's result (execute_result), not printed
                        self._flush()
                        self._send({"t": "display", "data": mime_bundle(value), "result": True})
                    else:
                        print(repr(value))
                        self.display(value)
            return "ok", 0, None
        except KeyboardInterrupt:
            err = self._error(*sys.exc_info())
            return "interrupted", 130, err
        except SystemExit as exc:
            c = exc.code
            if c is None:
                return "ok", 0, None
            if isinstance(c, int):
                return ("ok" if c == 0 else "error"), c, None
            print(c, file=sys.stderr)
            return "error", 1, None
        except BaseException:
            return ("error", 1, self._error(*sys.exc_info()))

    def _error(self, etype, value, tb):
        while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell-"):
            tb = tb.tb_next
        try:
            lines = traceback.format_exception(etype, value, tb)
        except Exception:
            lines = ["%s\n" % etype.__name__]
        text = "".join(lines)
        try:
            if not self.notebook:  # a notebook shows the error message's traceback instead
                sys.stderr.write(text)
        except Exception:
            pass
        try:
            sval = str(value)
        except Exception:
            sval = "<unprintable>"
        return {"name": etype.__name__, "value": sval, "traceback": text.splitlines()}

    # --- shell ----------------------------------------------------------------------
    def run_shell(self, code):
        cwd = WORK if os.path.isdir(WORK) else "/tmp"
        proc = subprocess.Popen(["/bin/bash", "-c", code], start_new_session=True, cwd=cwd)
        try:
            rc = proc.wait()
        except KeyboardInterrupt:
            _killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(0.2)
            except BaseException:
                pass
            _killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return "interrupted", 130, None
        if rc < 0:
            rc = 128 - rc
        return ("ok" if rc == 0 else "error"), rc, None

    # --- matplotlib -----------------------------------------------------------------
    def capture_figures(self):
        """Send open figures not saved by the user as PNG (plt.show() and end of call)."""
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return
        for num in list(plt.get_fignums()):
            fig = plt.figure(num)
            if not getattr(fig, "_airlock_saved", False):
                buf = io.BytesIO()
                try:
                    fig.savefig(buf, format="png", dpi=100)
                    self._flush()
                    self.figures += 1
                    png = base64.b64encode(buf.getvalue()).decode("ascii")
                    if self.notebook:  # shown in the cell, as in Jupyter, not saved as a file
                        self._send({"t": "display", "data": {"image/png": png, "text/plain": repr(fig)}})
                    else:
                        self._send({"t": "figure", "n": self.figures, "data": png})
                except Exception as exc:
                    print("airlock: could not render figure %s: %s" % (num, exc), file=sys.stderr)
            plt.close(fig)


def close_figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        try:
            plt.close("all")
        except Exception:
            pass


def _killpg(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except OSError:
        pass


def mime_bundle(obj):
    """A display bundle: text/plain always, plus html/png/jpeg/svg/markdown/latex when offered."""
    out = {}
    try:
        out["text/plain"] = repr(obj)
    except Exception as exc:
        out["text/plain"] = "<repr failed: %s>" % exc
    for meth, mime, binary in (("_repr_html_", "text/html", False), ("_repr_png_", "image/png", True),
                               ("_repr_jpeg_", "image/jpeg", True), ("_repr_svg_", "image/svg+xml", False),
                               ("_repr_markdown_", "text/markdown", False), ("_repr_latex_", "text/latex", False)):
        f = getattr(obj, meth, None)
        if f is None or not callable(f):
            continue
        try:
            v = f()
        except Exception:
            continue
        if isinstance(v, tuple) and v:
            v = v[0]
        if binary and isinstance(v, (bytes, bytearray)):
            out[mime] = base64.b64encode(bytes(v)).decode("ascii")
        elif not binary and isinstance(v, str):
            out[mime] = v
    if "image/png" not in out and type(obj).__module__.startswith("PIL."):
        try:
            buf = io.BytesIO()
            obj.save(buf, format="PNG")
            out["image/png"] = base64.b64encode(buf.getvalue()).decode("ascii")
        except Exception:
            pass
    return out


# --- matplotlib patching (at preload, or whenever pyplot gets imported) --------------
def patch_pyplot(plt, kernel_ref):
    if getattr(plt, "_airlock_patched", False):
        return
    import matplotlib.figure

    orig_savefig = matplotlib.figure.Figure.savefig

    def savefig(self, *args, **kwargs):
        fname = args[0] if args else kwargs.get("fname")
        if not isinstance(fname, io.IOBase) and not hasattr(fname, "write"):
            self._airlock_saved = True
        return orig_savefig(self, *args, **kwargs)

    matplotlib.figure.Figure.savefig = savefig

    def show(*args, **kwargs):
        k = kernel_ref()
        if k is not None:
            k.capture_figures()

    plt.show = show
    plt._airlock_patched = True


class _PyplotHook(importlib.abc.MetaPathFinder):
    """Patches matplotlib.pyplot right after user code imports it."""

    def __init__(self, kernel_ref):
        self.kernel_ref = kernel_ref
        self.busy = False

    def find_spec(self, name, path=None, target=None):
        if name != "matplotlib.pyplot" or self.busy:
            return None
        self.busy = True
        try:
            import importlib.util
            spec = importlib.util.find_spec(name)
        finally:
            self.busy = False
        if spec is None or spec.loader is None:
            return spec
        loader, ref = spec.loader, self.kernel_ref

        class Loader(importlib.abc.Loader):
            def create_module(self, s):
                return loader.create_module(s)

            def exec_module(self, module):
                loader.exec_module(module)
                patch_pyplot(module, ref)

        spec.loader = Loader()
        return spec


_current = None


def _ref():
    return _current


def preload():
    """Run in the zygote: make matplotlib ready and patched so every kernel inherits it."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    import numpy  # noqa: F401
    import pandas  # noqa: F401
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    patch_pyplot(plt, _ref)
    # Pay the lazy first-use costs once here, not in every kernel: pandas' formatting and
    # describe machinery, matplotlib's font cache and Agg PNG path. No user code runs.
    try:
        df = pandas.DataFrame({"a": [1, 2, 3], "b": [0.5, 1.5, 2.5]})
        repr(df)
        df._repr_html_()
        repr(df.describe())
        fig = plt.figure()
        plt.plot([1, 2], [3, 4])
        plt.title("warm-up")
        fig.savefig(io.BytesIO(), format="png", dpi=50)
        plt.close("all")
    except Exception:
        pass


def child_main(ctl_fd):
    """Entry point of a freshly forked kernel; never returns."""
    global _current
    try:
        # Until it takes its first call (Kernel.arm) a spare stays as the zygote made it:
        # not dumpable (a call running meanwhile, of the same uid, can neither ptrace it nor
        # open its /proc files), every signal blocked, no writable folder on sys.path.
        os.setsid()
        os.closerange(3, ctl_fd)
        os.closerange(ctl_fd + 1, 1 << 16)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
        os.set_inheritable(ctl_fd, False)
        for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # broken pipes raise, like a normal python
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        import socket
        sock = socket.socket(fileno=ctl_fd)
        sock.setblocking(True)
        for name in _OUR_MODULES:
            sys.modules.pop(name, None)
        sys.path[:] = [p for p in sys.path if p not in ("", os.path.dirname(os.path.abspath(__file__)))]
        for s in (sys.stdout, sys.stderr):
            try:
                s.reconfigure(line_buffering=True)
            except Exception:
                pass
        k = Kernel(sock)
        _current = k
        if os.environ.get("AIRLOCK_WARMUP", "1") == "1":
            k.warm_up()
        if not any(isinstance(f, _PyplotHook) for f in sys.meta_path):
            sys.meta_path.insert(0, _PyplotHook(_ref))
        # Set up: the controller starts a call's clock (and CPU count) only after this.
        wire.send(sock, {"t": "ready", "seq": None})
        k.serve()
    except BaseException:
        try:
            traceback.print_exc()
        finally:
            os._exit(70)
    os._exit(0)
