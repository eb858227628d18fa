"""Airlock kernel: a child forked by the zygote that runs user code, one call at a time.

The controller sends {"op": "exec", "seq", "token", "code", "env", "generated",
"notebook", "allow_stdin"} with the call's stdout, stderr (and stdin, or with allow_stdin
the answers pipe) fds on the kernel's control socket. The kernel puts them on fds 1, 2
(0), runs the cell, flushes, puts /dev/null back on 0/1/2, closes the call's fds and sends
{"t": "done", "seq", "token", ...}. Display items, captured figures, clear_output and
input requests are sent by airlock_display while the call runs. Between calls it answers
{"op": "introspect", "seq", "token", ...} (airlock_introspect) with {"t": "done", "seq",
"token", "reply"}. Nothing the kernel says is
trusted beyond "this call's own output": the controller decides status, timing and
artifacts from what it observes, and checks what it can of the rest.

User code runs in this interpreter, so the path that reports a call (this module) must
not change when that code changes names: it looks builtins up in a private copy and
calls library functions through references taken when it was imported (in the zygote,
before any user code ran); nothing user code is given (display, the pyplot and PIL
patches, sys.modules) leads here. What stays possible is written in PROTOCOL.md
("What a kernel can and cannot forge").
"""

__builtins__ = dict(vars(__import__("builtins")))

import _signal  # noqa: E402
import ast  # noqa: E402
import builtins  # noqa: E402
import ctypes  # noqa: E402
import linecache  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402

import airlock_display as rich  # noqa: E402
import airlock_introspect  # noqa: E402
import airlock_namespace  # noqa: E402
import airlock_wire as wire  # noqa: E402

WORK = os.environ.get("AIRLOCK_WORK", "/work")
PR_SET_DUMPABLE = 4
_OUR_MODULES = ("kernel", "zygote", "airlock_wire", "airlock_files", "airlock_display", "airlock_introspect",
                "airlock_namespace")

# Private references, taken at import (see the module doc).
_send = wire.send
_dup2, _open, _close, _exit, _chdir = os.dup2, os.open, os.close, os._exit, os.chdir
_DEVNULL, _O_RDWR = os.devnull, os.O_RDWR
_environ = os.environ
_modules = sys.modules
_exc_info = sys.exc_info
_signal_fn, _SIGINT, _SIG_IGN = _signal.signal, _signal.SIGINT, _signal.SIG_IGN
_int_handler = _signal.default_int_handler
_ONLY_AST, _Expr, _Expression = ast.PyCF_ONLY_AST, ast.Expr, ast.Expression
_whitespace_only = re.compile("^[ \t]+$", re.MULTILINE).sub
_leading_whitespace = re.compile("(^[ \t]*)(?:[^ \t\n])", re.MULTILINE).findall
_format_exception = traceback.format_exception
_rich_begin, _rich_end, _rich_close, _rich_show = rich.begin, rich.end_call, rich.close_figures, rich.display
_rich_result, _rich_after = rich.result, rich.after_call
_answer = airlock_introspect.answer
_ns_save, _ns_load = airlock_namespace.save, airlock_namespace.load
_NOT_ANSWERED = {"status": "error", "ename": "IntrospectionFailed", "evalue": "no answer", "traceback": []}
_INTERRUPTED = {"status": "error", "ename": "KeyboardInterrupt", "evalue": "no answer in time: interrupted", "traceback": []}


def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _libc()
_fflush = _LIBC.fflush if _LIBC is not None else None
_prctl = _LIBC.prctl if _LIBC is not None else None


def dedent(text):
    """textwrap.dedent, on private references."""
    text = _whitespace_only("", text)
    margin = None
    for indent in _leading_whitespace(text):
        if margin is None or margin.startswith(indent):
            margin = indent
        elif not indent.startswith(margin):
            for i, (x, y) in enumerate(zip(margin, indent)):
                if x != y:
                    margin = margin[:i]
                    break
    if not margin:
        return text
    return "\n".join(line[len(margin):] if line.startswith(margin) else line for line in text.split("\n"))


def _quiet(fn, *args):
    """Call a function user code may have changed, for its side effects only."""
    try:
        fn(*args)
    except (Exception, SystemExit):
        pass


def _flush():
    for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if s is not None:
                s.flush()
        except (Exception, SystemExit):
            pass
    if _fflush is not None:
        try:
            _fflush(None)
        except (Exception, SystemExit):
            pass


class Kernel:
    """One interpreter's user namespace and the loop serving calls on its control socket.
    Nothing user code is given refers to it."""

    def __init__(self, sock):
        self.sock = sock
        self.reader = wire.Reader(sock)
        self.main = types.ModuleType("__main__")
        self.main.__dict__["__builtins__"] = builtins
        self.ns = self.main.__dict__
        self.count = 0
        self.armed = None  # None until it arms; then "user", or "tool" (Airlock's own program)
        self.own = {}  # what the kernel itself put in ns (display): never saved in a snapshot

    def warm_up(self):
        """Run the call path once on /dev/null before any call, so the copy-on-write page
        faults and first-use costs of a fresh fork are paid ahead of the call."""
        ns = {"__name__": "__warmup__", "__builtins__": builtins}
        try:
            code = dedent("  x = [i for i in range(3)]\n  print(x)\n  x\n")
            tree = compile(code, "<warmup>", "exec", _ONLY_AST)
            last = _Expression(tree.body.pop().value)
            exec(compile(tree, "<warmup>", "exec"), ns)
            repr(eval(compile(last, "<warmup>", "eval"), ns))
            wire.loads(wire.dumps({"t": "done", "seq": 0, "error": None}))
            sys.stdin = open(0, "r", closefd=False)
            _flush()
            plt = sys.modules.get("matplotlib.pyplot")
            if plt is not None:
                plt.get_fignums()
        except Exception:
            pass

    def arm(self, tool):
        """Turn a waiting spare into the kernel of its first call (or, with the "arm" op,
        of the owner's next one-shot call, once nothing of the previous call runs): drop
        the signals other calls sent it while it waited (blocked since the fork), make it
        dumpable (user code owns its /proc/self, as in a normal python), raise its
        oom_score_adj to 1000 (the OOM killer picks a kernel, not the controller), put
        /work first on sys.path and make it the cwd, then unblock signals. Nothing of the previous call's is alive or
        left in /work by now: the controller killed and cleaned up before sending this.
        A kernel armed for Airlock's own program (tool: the file and SQL tools) stays not
        dumpable and keeps /work off sys.path, so files the session wrote there cannot
        replace a module it imports."""
        try:
            while True:
                pending = _signal.sigpending()
                if not pending or _signal.sigtimedwait(pending, 0) is None:
                    break
        except OSError:
            pass
        if _prctl is not None and not tool:
            _prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        try:
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("1000")
        except OSError:
            pass
        if not tool:
            sys.path.insert(0, WORK)
            # A container with a network policy: the user site pip installs into
            # (PYTHONUSERBASE under /work, the session's own), after /work.
            base = _environ.get("PYTHONUSERBASE")
            if base:
                sys.path.insert(1, "%s/lib/python%d.%d/site-packages" % ((base,) + tuple(sys.version_info[:2])))
        try:
            _chdir(WORK)
        except OSError:
            pass
        _signal.pthread_sigmask(_signal.SIG_SETMASK, ())
        self.armed = "tool" if tool else "user"

    # --- the serve loop -------------------------------------------------------------
    def serve(self):
        null = _open(_DEVNULL, _O_RDWR)
        while True:
            msg = self.reader.recv()
            if msg is None:
                _exit(0)
            nfds = msg.get("nfds", 0)
            fds = self.reader.take_fds(nfds if type(nfds) is int else 0)
            if msg.get("op") == "introspect" and not fds:
                self.introspect(msg)
                continue
            if msg.get("op") in ("snapshot", "restore") and not fds:
                self.namespace(msg)
                continue
            if msg.get("op") == "arm" and not fds:
                if self.armed is None:
                    self.arm(False)
                continue
            if msg.get("op") != "exec" or len(fds) != nfds or len(fds) < 2:
                for fd in fds:
                    _close(fd)
                continue
            # The token proves a done is this loop's: user code gets no reference to it.
            token = msg.pop("token", None)
            seq = msg.get("seq")
            generated = msg.get("generated") is True
            if self.armed is None:
                self.arm(generated)
            elif generated and self.armed != "tool":
                # Armed for user code (the "arm" op): Airlock's own program never runs here.
                _exit(70)
            # With allow_stdin the third fd is the answers pipe (input()), not stdin.
            answers = fds.pop() if msg.get("allow_stdin") is True and len(fds) > 2 else None
            _quiet(_rich_begin, seq, msg.get("notebook") is True, answers)
            _dup2(fds[0], 1)
            _dup2(fds[1], 2)
            _dup2(fds[2] if len(fds) > 2 else null, 0)
            for fd in fds:
                _close(fd)
            try:
                sys.stdin = open(0, "r", closefd=False)
            except (Exception, SystemExit):
                pass
            status, code, error = self.call(msg)
            _flush()
            for fd in (0, 1, 2):
                _dup2(null, fd)
            if answers is not None:
                _close(answers)
            try:
                _send(self.sock, {"t": "done", "seq": seq, "token": token, "status": status, "exit_code": code,
                                  "error": error, "execution_count": self.count})
            except OSError:
                _exit(70)

    def introspect(self, msg):
        """Answer a question about code in the namespace (Jupyter's complete, inspect,
        is_complete) with a done carrying the question's own token: the controller makes
        a fresh one per question, so what user code might learn while its objects are
        looked at is worth nothing for any call."""
        token = msg.pop("token", None)
        seq = msg.get("seq")
        try:
            # The controller interrupts a question it has waited too long for: it stops
            # here, the namespace kept, instead of the kernel being killed.
            _signal_fn(_SIGINT, _int_handler)
            try:
                reply = _answer(msg, self.ns, self.own)
            finally:
                _signal_fn(_SIGINT, _SIG_IGN)
        except KeyboardInterrupt:
            _signal_fn(_SIGINT, _SIG_IGN)
            reply = _INTERRUPTED
        except BaseException:
            reply = _NOT_ANSWERED
        try:
            _send(self.sock, {"t": "done", "seq": seq, "token": token, "reply": reply})
        except OSError:
            _exit(70)
        except BaseException:  # not JSON (what user code gave Jedi), too deep
            try:
                _send(self.sock, {"t": "done", "seq": seq, "token": token, "reply": _NOT_ANSWERED})
            except BaseException:
                _exit(70)

    def namespace(self, msg):
        """Save the namespace to msg's path ("snapshot", at most max_bytes) or load it from
        there ("restore": the kernel is armed first, as for a call, so that the values can
        import modules under /work); answer with a done carrying the question's own token
        and the report, or {"error": why}."""
        token = msg.pop("token", None)
        seq = msg.get("seq")
        try:
            path = str(msg.get("path"))
            if msg.get("op") == "snapshot":
                limit = msg.get("max_bytes")
                count = msg.get("execution_count")
                reply = _ns_save(self.ns, self.main, path, limit if type(limit) is int else 1 << 30, self.own,
                                 count if type(count) is int else 0)
            else:
                if self.armed is None:
                    self.arm(False)
                reply = _ns_load(self.ns, self.main, path)
        except BaseException as exc:
            try:
                reply = {"error": "%s: %s" % (type(exc).__name__, exc)}
            except BaseException:
                reply = {"error": "the namespace could not be %s" % ("saved" if msg.get("op") == "snapshot" else "loaded")}
        try:
            _send(self.sock, {"t": "done", "seq": seq, "token": token, "reply": reply})
        except OSError:
            _exit(70)
        except BaseException:
            try:
                _send(self.sock, {"t": "done", "seq": seq, "token": token, "reply": {"error": "the report is not JSON"}})
            except BaseException:
                _exit(70)

    def call(self, msg):
        """Run one call's code with its env; (status, exit_code, error)."""
        env = msg.get("env") or {}
        saved = {}
        try:
            saved = {k: _environ.get(k) for k in env}
            _environ.update({str(k): str(v) for k, v in env.items()})
        except (Exception, SystemExit):
            pass
        self.count += 1
        status, code, error = "error", 1, None
        try:
            # SIGINT (interrupt, timeout) may only land while the call runs; a second
            # one during the cleanup below is swallowed by the outer handler.
            _signal_fn(_SIGINT, _int_handler)
            try:
                status, code, error = self.run_cell(msg.get("code", ""), msg.get("notebook") is True)
                _quiet(_rich_end)  # figures: the call's own output, its status stands
            finally:
                _signal_fn(_SIGINT, _SIG_IGN)
        except KeyboardInterrupt:
            _signal_fn(_SIGINT, _SIG_IGN)
            status, code = "interrupted", 130
        finally:
            _quiet(_rich_close)
            _quiet(_rich_after)
            if msg.get("mode") == "session":
                for k, v in saved.items():
                    try:
                        if v is None:
                            _environ.pop(k, None)
                        else:
                            _environ[k] = v
                    except (Exception, SystemExit):
                        pass
        return status, code, error

    def run_cell(self, code, notebook):
        """Run a cell like a notebook: the last expression's value is printed and shown
        (in notebook mode only shown, as the cell's result; an error's traceback is then
        not also written to stderr: the front end shows the error's own)."""
        name = "<cell-%d>" % self.count
        code = dedent(code if type(code) is str else "")
        try:
            linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        except (Exception, SystemExit):
            pass
        try:
            tree = compile(code, name, "exec", _ONLY_AST)
            last = None
            if tree.body and type(tree.body[-1]) is _Expr:
                last = _Expression(tree.body.pop().value)
            compiled = compile(tree, name, "exec")
            compiled_last = compile(last, name, "eval") if last is not None else None
            _modules["__main__"] = self.main
            exec(compiled, self.ns)
            if compiled_last is not None:
                value = eval(compiled_last, self.ns)
                if value is not None:
                    self.ns["_"] = value
                    if notebook:
                        _quiet(_rich_result, value)
                    else:
                        print(repr(value))
                        _flush()
                        _quiet(_rich_show, value)
            return "ok", 0, None
        except KeyboardInterrupt:
            return "interrupted", 130, error_of(*_exc_info(), echo=not notebook)
        except SystemExit as exc:
            c = exc.code
            if c is None:
                return "ok", 0, None
            if isinstance(c, int):
                return ("ok" if c == 0 else "error"), int(c), None
            try:
                print(c, file=sys.stderr)
            except (Exception, SystemExit):
                pass
            return "error", 1, None
        except BaseException:
            return "error", 1, error_of(*_exc_info(), echo=not notebook)


def error_of(etype, value, tb, echo=True):
    """The structured error of an exception (only the cell's frames), also written to
    stderr if echo."""
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell-"):
        tb = tb.tb_next
    try:
        lines = _format_exception(etype, value, tb)
        text = "".join(str(x) for x in lines)
    except BaseException:
        text = "%s\n" % etype.__name__
    try:
        if echo:
            sys.stderr.write(text)
    except BaseException:
        pass
    try:
        sval = str(value)
    except BaseException:
        sval = "<unprintable>"
    return {"name": str(etype.__name__), "value": sval, "traceback": text.splitlines()}


def preload():
    """Run in the zygote: make matplotlib ready and patched so every kernel inherits it,
    and import pyflakes, which code-analysis batches run once per item (60 ms each)."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    import pandas  # noqa: F401
    import pyflakes.api  # noqa: F401
    import pyflakes.reporter  # noqa: F401
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rich.patch_pyplot(plt)
    # Pay the lazy first-use costs once here, not in every kernel: pandas' formatting and
    # describe machinery, matplotlib's font cache and Agg PNG path. No user code runs.
    import io
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
        # matplotlib empties its font cache in every forked child (an at-fork hook):
        # freeing the cached font there cost every kernel about 100 copy-on-write faults. Empty it here once; a kernel that draws text loads the font as
        # it did before, after its own hook had emptied the cache.
        import matplotlib.font_manager as font_manager
        font_manager._get_font.cache_clear()
    except Exception:
        pass


def child_main(ctl_fd):
    """Entry point of a freshly forked kernel; never returns."""
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
        import signal
        for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # broken pipes raise, like a normal python
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        import socket
        sock = socket.socket(fileno=ctl_fd)
        sock.setblocking(True)
        for name in _OUR_MODULES:
            sys.modules.pop(name, None)
        here = os.path.dirname(os.path.abspath(__file__))
        # The IPython shim (IPython.display mapped to display() & co) last: read-only, and a
        # real IPython installed in the session's user site is found first.
        sys.path[:] = [p for p in sys.path if p not in ("", here)] + [os.path.join(here, "shim")]
        for s in (sys.stdout, sys.stderr):
            try:
                s.reconfigure(line_buffering=True)
            except Exception:
                pass
        k = Kernel(sock)
        rich.install(k.ns, sock)
        k.own = dict(k.ns)
        if os.environ.get("AIRLOCK_WARMUP", "1") == "1":
            k.warm_up()
        # Set up: the controller starts a call's clock (and CPU count) only after this.
        wire.send(sock, {"t": "ready", "seq": None})
        k.serve()
    except BaseException:
        try:
            traceback.print_exc()
        finally:
            os._exit(70)
    os._exit(0)
