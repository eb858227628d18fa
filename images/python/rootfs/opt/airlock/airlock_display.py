"""What user code sees of the kernel: display(), clear_output(), input() answered by
Airlock, mime bundles, figures, PIL's Image.show().

This is the part of the kernel that user code can see and change: display() and
clear_output() are builtins, input() and getpass.getpass() are replaced during a call
sent with allow_stdin, matplotlib's pyplot.show/Figure.savefig and PIL's image viewers
are patched to come here. What it sends (display, figure, clear_output and
input_request messages) is trusted only as the call's own output. It shares no object with the kernel's reporting path
(kernel.py): it sends through its own, separate instance of airlock_wire, so
nothing reachable from display() leads to the code that reports a call's status.
"""

import base64
import builtins
import importlib.abc
import importlib.util
import io
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _own_wire():
    """A second instance of airlock_wire (own globals, own builtins): display frames
    go through it, so patching what display() can reach never touches the kernel's."""
    spec = importlib.util.spec_from_file_location("airlock_wire_display", os.path.join(HERE, "airlock_wire.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_wire = _own_wire()
_sock = None  # the kernel's control socket
_seq = None  # the running call's seq (display and figure messages carry it)
_figures = 0  # figures sent in the running call
_notebook = False  # the running call's "notebook" flag: figures as displays
_answers = None  # read end of the running call's answers pipe (allow_stdin), else None
_pending = b""  # bytes read from it past the last answer
_saved_input = None  # (builtins.input, the getpass module, its getpass) while ours replace them


class _Counted(io.RawIOBase):
    """fd 1 or 2 under sys.stdout/sys.stderr, counting the bytes written in the running
    call: the messages carry the counts ("o"), so the controller puts exactly what was
    written before a message before it (not what a print right after it wrote)."""

    def __init__(self, fd):
        super().__init__()
        self.fd = fd
        self.n = 0

    def writable(self):
        return True

    def fileno(self):
        return self.fd

    def isatty(self):
        return False

    def write(self, b):
        n = _os_write(self.fd, b)
        self.n += n
        return n

    def close(self):
        pass  # fd 1 and 2 stay open (the kernel puts /dev/null there between calls)


_os_write = os.write
_counted = (_Counted(1), _Counted(2))


def _count_output():
    """Put counting writers under sys.stdout and sys.stderr (and __stdout__/__stderr__),
    line-buffered, with the streams' encoding and error handler."""
    for i, name in enumerate(("stdout", "stderr")):
        old = getattr(sys, name)
        try:
            new = io.TextIOWrapper(io.BufferedWriter(_counted[i]), encoding=old.encoding, errors=old.errors,
                                   line_buffering=True)
        except Exception:
            continue
        setattr(sys, name, new)
        setattr(sys, "__%s__" % name, new)


def _send(obj):
    obj["seq"] = _seq
    obj["o"] = [_counted[0].n, _counted[1].n]
    try:
        _wire.send(_sock, obj)
    except OSError:
        os._exit(70)


def _flush():
    for s in (sys.stdout, sys.stderr):
        try:
            if s is not None:
                s.flush()
        except Exception:
            pass


def display(*objs, **_kw):
    """Show objects as rich output (mime bundles), like IPython's display()."""
    for obj in objs:
        _flush()
        _send({"t": "display", "data": mime_bundle(obj)})


def clear_output(wait=False):
    """Clear the cell's output so far (at once, or with wait=True when the next output
    arrives), like IPython.display.clear_output; only notebook front ends show it."""
    _flush()
    _send({"t": "clear_output", "wait": bool(wait)})


def result(value):
    """The cell's value in notebook mode: a display marked as the result (Jupyter's
    execute_result), instead of printed."""
    _flush()
    _send({"t": "display", "data": mime_bundle(value), "result": True})


def install(ns, sock):
    """Make display() and clear_output() builtins (display also a name in the user
    namespace ns), connect them to the kernel's control socket, and patch pyplot and PIL's
    viewers (now or when imported)."""
    global _sock
    _sock = sock
    _count_output()
    ns["display"] = display
    builtins.display = display  # also for the user's own modules, as in IPython
    builtins.clear_output = clear_output
    for name, patch in _PATCHES.items():
        mod = sys.modules.get(name)
        if mod is not None:
            patch(mod)
    if not any(isinstance(f, _PostImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PostImport())


def begin(seq, notebook=False, answers=None):
    """A call starts: its messages carry seq; notebook sends figures as displays; with
    answers (the read end of the call's answers pipe, allow_stdin) input() and
    getpass.getpass() ask Airlock until after_call()."""
    global _seq, _figures, _notebook, _answers, _pending
    _seq, _figures, _notebook, _answers, _pending = seq, 0, notebook, answers, b""
    for c in _counted:
        c.n = 0  # the call's pipes are new
    if answers is not None:
        _hook_input()


def after_call():
    """A call is over: input() and getpass.getpass() are the ones it found again."""
    global _answers, _saved_input
    _answers = None
    if _saved_input is not None:
        builtins.input, module, fn = _saved_input
        module.getpass = fn
        _saved_input = None


def end_call():
    """A call's code is done: send its open figures not saved by the user, close all."""
    try:
        capture_figures()
    finally:
        close_figures()


def close_figures():
    """Close every open figure (the next call starts with none)."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        try:
            plt.close("all")
        except Exception:
            pass


def capture_figures():
    """Send open figures not saved by the user as PNG (plt.show() and end of call)."""
    global _figures
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    for num in list(plt.get_fignums()):
        fig = plt.figure(num)
        if not getattr(fig, "_airlock_saved", False):
            buf = io.BytesIO()
            try:
                fig.savefig(buf, format="png", dpi=100)
                _flush()
                png = base64.b64encode(buf.getvalue()).decode("ascii")
                if _notebook:  # shown in the cell, as in Jupyter, not saved as a file
                    _send({"t": "display", "data": {"image/png": png, "text/plain": repr(fig)}})
                else:
                    _figures += 1
                    _send({"t": "figure", "n": _figures, "data": png})
            except Exception as exc:
                print("airlock: could not render figure %s: %s" % (num, exc), file=sys.stderr)
        plt.close(fig)


def mime_bundle(obj):
    """A display bundle: text/plain always, plus html/png/jpeg/svg/markdown/latex when offered."""
    out = {}
    try:
        out["text/plain"] = repr(obj)
    except Exception as exc:
        out["text/plain"] = "<repr failed: %s>" % exc
    _mimebundle(obj, out)
    for meth, mime, binary in (("_repr_html_", "text/html", False), ("_repr_png_", "image/png", True),
                               ("_repr_jpeg_", "image/jpeg", True), ("_repr_svg_", "image/svg+xml", False),
                               ("_repr_markdown_", "text/markdown", False), ("_repr_latex_", "text/latex", False)):
        f = getattr(obj, meth, None)
        if f is None or not callable(f) or mime in out:
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


def _mimebundle(obj, out):
    """What obj's _repr_mimebundle_ (IPython's protocol: plotly, altair, the IPython shim's
    JSON and Javascript) gives, into out: str values as they are, bytes as base64, other
    values (a JSON mime's object) as JSON text."""
    f = getattr(obj, "_repr_mimebundle_", None)
    if f is None or not callable(f):
        return
    try:
        v = f(include=None, exclude=None)
    except Exception:
        return
    if isinstance(v, tuple) and v:
        v = v[0]
    if not isinstance(v, dict):
        return
    for mime, val in v.items():
        if isinstance(val, str):
            out[str(mime)] = val
        elif isinstance(val, (bytes, bytearray)):
            out[str(mime)] = base64.b64encode(bytes(val)).decode("ascii")
        else:
            try:
                out[str(mime)] = _wire.dumps(val)
            except Exception:
                pass


# --- input() answered by Airlock (Jupyter's stdin channel) --------------------------
def ask(prompt="", password=False):
    """input()/getpass() of a call sent with allow_stdin: tell Airlock (an input_request
    message, which the controller forwards) and wait for its answer, a JSON string on a line
    of the call's answers pipe. An interrupt ends the wait (KeyboardInterrupt); outside such
    a call there is nothing to read (EOFError, as input() on the empty stdin)."""
    global _pending
    fd = _answers
    if fd is None:
        raise EOFError("EOF when reading a line")
    _flush()
    _send({"t": "input_request", "prompt": str(prompt), "password": bool(password)})
    while b"\n" not in _pending:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            raise EOFError("EOF when reading a line")
        _pending += chunk
    line, _, _pending = _pending.partition(b"\n")
    try:
        value = _wire.loads(line.decode("ascii"))
    except ValueError:
        value = ""
    return value if isinstance(value, str) else ""


def _hook_input():
    global _saved_input
    import getpass
    if _saved_input is None:
        _saved_input = (builtins.input, getpass, getpass.getpass)
    builtins.input = lambda prompt="": ask(prompt)
    getpass.getpass = lambda prompt="Password: ", stream=None: ask(prompt, True)


# --- patches of the user's libraries ------------------------------------------------
def patch_pyplot(plt):
    """plt.show() sends the open figures; a figure saved to a file is not sent again."""
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
    plt.show = lambda *args, **kwargs: capture_figures()
    plt._airlock_patched = True


class _Viewer:
    """PIL's Image.show() viewer: the image becomes a display result (as in E2B and
    Jupyter) instead of an external program that is not there."""

    def show(self, image, **_options):
        display(image)
        return 1


def patch_pil_show(image_show):
    """Put the display viewer first in PIL.ImageShow's list."""
    if not any(isinstance(v, _Viewer) for v in getattr(image_show, "_viewers", [])):
        image_show.register(_Viewer(), -1)


_PATCHES = {"matplotlib.pyplot": patch_pyplot, "PIL.ImageShow": patch_pil_show}


class _PostImport(importlib.abc.MetaPathFinder):
    """Patches a module of _PATCHES right after user code imports it."""

    def __init__(self):
        self.busy = False

    def find_spec(self, name, path=None, target=None):
        patch = _PATCHES.get(name)
        if patch is None or self.busy:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.busy = False
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader

        class Loader(importlib.abc.Loader):
            def create_module(self, s):
                return loader.create_module(s)

            def exec_module(self, module):
                loader.exec_module(module)
                patch(module)

        spec.loader = Loader()
        return spec
