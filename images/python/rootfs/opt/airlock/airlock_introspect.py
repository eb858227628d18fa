"""Kernel-side answers to Jupyter's complete, inspect and is_complete requests.

kernel.Kernel.serve calls answer() (through a reference taken at import) for an
{"op": "introspect"} message, outside any call, over the session's own namespace. User
code can change what this computes (it owns its objects, and Jedi is an ordinary module it
may import and patch), so an answer is that session's own output and nothing more: the
controller only checks it is a JSON object of bounded size, received with the request's
own token (airlock_kernelops.py). Completion uses Jedi (Debian's python3-jedi), imported
on the first completion, with the parse trees of the image's libraries read from JEDI_CACHE
(built with the image: warm_cache) instead of parsed again in every session; inspection
resolves the dotted name at the cursor by attribute lookups only (no calls) and shows its
signature and docstring; is_complete follows codeop.
See images/python/PROTOCOL.md "Jupyter operations".
"""

import codeop
import inspect as _inspect
import os
import re

MAX_MATCHES = 2000
MAX_DOC = 64 << 10
# Parso's pickled parse trees of the image's own libraries, written by warm_cache when the
# image is built (images/build.sh) and read-only in a sandbox: a first completion on a
# DataFrame takes about 0.5 s with it and 2 s without, and nothing goes to the session's
# /tmp. A module not in it is parsed and kept in the kernel's memory only.
JEDI_CACHE = "/usr/local/share/airlock/jedi"
# What warm_cache completes: the preloaded libraries (kernel.preload) and common builtins.
WARM_SETUP = ("import os, re, json, math, collections, datetime\n"
              "import numpy as np\nimport pandas as pd\nimport matplotlib.pyplot as plt\n"
              "df = pd.DataFrame({'a': [1]})\narr = np.zeros(1)\nfig, ax = plt.subplots()\n")
WARM_CODE = ("are", "df.", "df.a.", "df.groupby('a').", "arr.", "np.", "pd.", "plt.", "ax.", "fig.",
             "os.", "os.path.", "re.", "json.", "math.", "collections.", "datetime.", "'s'.",
             "[].", "{}.", "print(", "df.merge(", "pd.read_csv(", "np.linspace(")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*$")


def answer(msg, ns, own=None):
    """The reply content for an {"op": "introspect"} message (own: what the kernel itself
    put in ns, left out of a variables listing)."""
    what = msg.get("what")
    code = str(msg.get("code") or "")
    try:
        pos = int(msg.get("cursor_pos") if msg.get("cursor_pos") is not None else len(code))
    except (TypeError, ValueError):
        pos = len(code)
    pos = max(0, min(pos, len(code)))
    try:
        if what == "complete":
            return complete(code, pos, ns)
        if what == "inspect":
            return inspect_at(code, pos, int(msg.get("detail_level") or 0), ns)
        if what == "is_complete":
            return is_complete(code)
        if what == "variables":
            return variables(ns, own or {})
        return _error(ValueError("unknown introspection %r" % (what,)))
    except Exception as exc:  # a bug in Jedi or a broken object must not kill the kernel
        return _error(exc)


def _error(exc):
    return {"status": "error", "ename": type(exc).__name__, "evalue": str(exc)[:1000], "traceback": []}


def _line_col(code, pos):
    before = code[:pos]
    line = before.count("\n") + 1
    return line, pos - (before.rfind("\n") + 1)


def _jedi(cache=JEDI_CACHE):
    """Jedi, set on its first use to read the image's parse trees from cache (when the
    image has them) and to keep a tree it cannot save there in memory only."""
    import jedi
    if not getattr(jedi, "_airlock_cache", False) and os.path.isdir(cache):
        import parso.cache
        save = parso.cache._save_to_file_system

        def save_if_writable(*args, **kwargs):
            try:
                save(*args, **kwargs)
            except OSError:  # a read-only cache: parso keeps the tree in memory
                pass
        parso.cache._save_to_file_system = save_if_writable
        jedi.settings.cache_directory = cache
        jedi._airlock_cache = True
    return jedi


def warm_cache(cache=JEDI_CACHE):
    """Write the parse trees of what WARM_CODE completes to cache (run at image build)."""
    import jedi
    os.makedirs(cache, exist_ok=True)
    jedi.settings.cache_directory = cache
    ns = {}
    exec(WARM_SETUP, ns)
    for code in WARM_CODE:
        jedi.Interpreter(code, [ns]).complete()


def complete(code, pos, ns):
    """Jupyter's complete_reply: Jedi's completions at pos, over the live namespace."""
    jedi = _jedi()
    line, col = _line_col(code, pos)
    comps = jedi.Interpreter(code, [ns]).complete(line, col)
    matches, start = [], pos
    for c in comps[:MAX_MATCHES]:
        typed = len(c.name) - len(c.complete or "")
        start = min(start, pos - typed)
        matches.append(c.name)
    return {"status": "ok", "matches": matches, "cursor_start": start, "cursor_end": pos, "metadata": {}}


def _name_at(code, pos):
    """The dotted name the cursor is in or right after (e.g. 'np.linspace')."""
    end = pos
    while end < len(code) and (code[end].isalnum() or code[end] == "_"):
        end += 1
    m = _NAME.search(code[:end])
    if m is None and pos and code[pos - 1] == "(":
        return _name_at(code, pos - 1)
    if m is None:
        # Inside a call's parentheses: the callee, as IPython does.
        depth = 0
        for i in range(pos - 1, -1, -1):
            ch = code[i]
            if ch == ")":
                depth += 1
            elif ch == "(":
                if depth == 0:
                    return _name_at(code, i)
                depth -= 1
        return None
    return re.sub(r"\s+", "", m.group(0))


def _resolve(name, ns):
    import builtins
    parts = name.split(".")
    if parts[0] in ns:
        obj = ns[parts[0]]
    elif hasattr(builtins, parts[0]):
        obj = getattr(builtins, parts[0])
    else:
        raise LookupError(name)
    for p in parts[1:]:
        obj = getattr(obj, p)
    return obj


def inspect_at(code, pos, detail, ns):
    """Jupyter's inspect_reply: signature, type and docstring of the name at pos."""
    name = _name_at(code, pos)
    if not name:
        return {"status": "ok", "found": False, "data": {}, "metadata": {}}
    try:
        obj = _resolve(name, ns)
    except Exception:
        return {"status": "ok", "found": False, "data": {}, "metadata": {}}
    lines = []
    try:
        sig = str(_inspect.signature(obj))
        lines.append("Signature: %s%s" % (name, sig))
    except (TypeError, ValueError):
        pass
    lines.append("Type:      %s" % type(obj).__name__)
    if not callable(obj) or isinstance(obj, (int, float, str, bytes, list, dict, tuple, set)):
        try:
            text = repr(obj)
        except Exception as exc:
            text = "<repr failed: %s>" % exc
        lines.append("Value:     %s" % text[:2000])
    doc = _inspect.getdoc(obj) or ""
    if doc:
        lines.append("Docstring:\n%s" % doc)
    if detail:
        try:
            src = _inspect.getsource(obj)
            lines.append("Source:\n%s" % src)
        except (TypeError, OSError):
            pass
        try:
            lines.append("File:      %s" % _inspect.getfile(obj))
        except TypeError:
            pass
    text = "\n".join(lines)[:MAX_DOC]
    return {"status": "ok", "found": True, "data": {"text/plain": text}, "metadata": {}}


def is_complete(code):
    """Jupyter's is_complete_reply: complete, incomplete (with the next line's indent) or invalid."""
    if not code.strip():
        return {"status": "complete"}
    src = code if code.endswith("\n") else code + "\n"
    try:
        compiled = codeop.compile_command(src, "<cell>", "exec")
    except (SyntaxError, OverflowError, ValueError):
        return {"status": "invalid"}
    if compiled is not None and not code.rstrip("\n").splitlines()[-1][:1].isspace():
        return {"status": "complete"}
    last = [ln for ln in code.splitlines() if ln.strip()][-1]
    indent = last[:len(last) - len(last.lstrip())]
    if last.rstrip().endswith(":"):
        indent += "    "
    return {"status": "incomplete", "indent": indent}



MAX_VARIABLES = 500
MAX_SUMMARY = 120


def _shape(value):
    """A value's shape as a list of ints (arrays, frames), its length for a sized
    container, or None. Attribute lookups and len() only: no repr of the whole value."""
    shape = getattr(type(value), "shape", None) is not None and getattr(value, "shape", None)
    if isinstance(shape, tuple) and all(type(d) is int for d in shape):
        return list(shape)
    if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)):
        return [len(value)]
    return None


def _size(value):
    """A value's size in bytes: nbytes or memory_usage for arrays and frames, else
    sys.getsizeof (the object itself, not what it refers to)."""
    import sys
    try:
        mem = getattr(value, "memory_usage", None)
        if callable(mem) and hasattr(value, "columns"):
            return int(mem(index=True, deep=False).sum())
        if callable(mem):
            return int(mem(index=True, deep=False))
        nbytes = getattr(value, "nbytes", None)
        if type(nbytes) is int:
            return nbytes
        return int(sys.getsizeof(value))
    except Exception:
        return None


def _summary(value):
    """The start of a value's repr (not for arrays and frames, whose shape says more)."""
    if hasattr(value, "shape") and hasattr(value, "dtype") or hasattr(value, "columns"):
        return ""
    try:
        text = repr(value)
    except Exception as exc:
        return "<repr failed: %s>" % type(exc).__name__
    text = " ".join(text.split())
    return text if len(text) <= MAX_SUMMARY else text[:MAX_SUMMARY - 1] + "\u2026"


def variables(ns, own):
    """The session's globals for a variable panel: name, type, shape, size (bytes) and a
    short summary of each, sorted by name. Left out: names starting with _, modules,
    and what the kernel itself put there (display)."""
    import types
    out = []
    for name, value in list(ns.items()):
        if name.startswith("_") or (name in own and own[name] is value) or isinstance(value, types.ModuleType):
            continue
        t = type(value)
        mod = getattr(t, "__module__", "") or ""
        entry = {"name": name, "type": t.__name__, "module": "" if mod == "builtins" else mod.split(".")[0],
                 "shape": None, "size": None, "summary": ""}
        try:
            entry["shape"] = _shape(value)
        except Exception:
            pass
        entry["size"] = _size(value)
        entry["summary"] = _summary(value)
        out.append(entry)
    out.sort(key=lambda e: e["name"])
    more = max(0, len(out) - MAX_VARIABLES)
    return {"status": "ok", "variables": out[:MAX_VARIABLES], "more": more}
