"""A session kernel's global namespace saved to a file and loaded back, with dill (issue 30).

Run by kernel.py between calls ("snapshot" and "restore" kernel ops), in the owner's own
sandbox: the bytes are never unpickled anywhere else. What cannot be saved is reported by
name, type and reason, never silently dropped: open files, sockets, generators (and
coroutines), locks, threads, and any value dill refuses. Modules are not pickled but
re-imported by name on restore. The names the kernel itself put there (display) and the
interpreter's own dunders are left out: a fresh kernel has its own.

The file is a pickle of {"version", "plain": {name: C pickle}, "dill": one dill pickle
of {name: value}, "modules": {name: module name}, "count": the session's execution count}:
see save() for which value goes where.
The dill part is dumped with one pickler so that objects shared between its names (an
instance and its class defined in the session) stay shared.
"""

import _thread
import importlib
import io
import pickle
import socket
import sys
import threading
import types

VERSION = 2
MAX_SKIPPED = 200  # entries reported; more are summarised in one
PLUMBING = frozenset(("__builtins__", "__name__", "__doc__", "__package__", "__loader__", "__spec__"))

_LOCKS = (type(_thread.allocate_lock()), type(threading.RLock()), threading.Condition, threading.Semaphore,
          threading.Event, threading.Barrier)


class TooLarge(Exception):
    """The namespace is over the byte bound."""


class _Bounded:
    """A file wrapper that refuses to write past limit bytes (or only counts, with f None)."""

    def __init__(self, f, limit):
        self.f, self.limit, self.n = f, limit, 0

    def write(self, b):
        self.n += len(b)
        if self.n > self.limit:
            raise TooLarge("the namespace is over the snapshot's %d-byte bound" % self.limit)
        if self.f is not None:
            self.f.write(b)
        return len(b)


def why_not(value):
    """The reason value cannot be saved by its type, or None."""
    if isinstance(value, (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)):
        return "a generator's running frame cannot be saved: re-create it"
    if isinstance(value, io.IOBase):
        return "an open file cannot be saved: open it again (the files under /work are kept)"
    if isinstance(value, socket.socket):
        return "an open socket cannot be saved: connect again"
    if isinstance(value, threading.Thread):
        return "a running thread cannot be saved: start it again"
    if isinstance(value, _LOCKS):
        return "a lock or other synchronisation object cannot be saved: create it again"
    if isinstance(value, (types.FrameType, types.TracebackType)):
        return "a frame or traceback cannot be saved"
    return None


def _type_name(value):
    t = type(value)
    mod = getattr(t, "__module__", "") or ""
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", "?")
    return name if mod in ("builtins", "__main__") else "%s.%s" % (mod, name)


def _skip(skipped, name, value, reason):
    skipped.append({"name": str(name), "type": _type_name(value), "reason": str(reason)[:300]})


def _pickler(dill, f, main):
    p = dill.Pickler(f, protocol=dill.HIGHEST_PROTOCOL, byref=False, recurse=False)
    p._main = main  # functions and classes of the session's __main__ are saved by value
    return p


def save(ns, main, path, limit, own, count=0):
    """Write ns (the kernel's namespace, main its module) to path, at most limit bytes.
    own maps the names the kernel put there itself to their objects; count is the
    session's execution count, kept for the session restored from it. Returns the
    report: names saved, modules, skipped [{name, type, reason}], bytes.

    A value the C pickler saves without referring to the session's __main__ (a
    DataFrame, an array, a fitted model) is pickled by it alone (dill's pure-Python
    pickler is about ten times slower on large frames); the rest (lambdas, functions and
    classes defined in the session, their instances) go together through dill, which
    saves them by value. Identity shared between two names of the first kind is not
    kept (each is pickled on its own)."""
    import dill
    values, modules, skipped = {}, {}, []
    for name, value in list(ns.items()):
        if name in PLUMBING or (name in own and own[name] is value):
            continue
        if isinstance(value, types.ModuleType):
            modules[name] = value.__name__
            continue
        reason = why_not(value)
        if reason is not None:
            _skip(skipped, name, value, reason)
            continue
        values[name] = value
    saved_main = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        plain, total = {}, 0
        for name in list(values):
            try:
                b = pickle.dumps(values[name], protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException:
                continue
            if b"__main__" in b:
                continue
            total += len(b)
            if total > limit:
                raise TooLarge("the namespace is over the snapshot's %d-byte bound" % limit)
            plain[name] = b
            del values[name]
        rest = _dill_bytes(dill, values, main, limit - total, skipped)
    finally:
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    with open(path, "wb") as f:
        pickle.dump({"version": VERSION, "plain": plain, "dill": rest, "modules": modules, "count": count}, f,
                    protocol=pickle.HIGHEST_PROTOCOL)
        size = f.tell()
    if len(skipped) > MAX_SKIPPED:
        extra = len(skipped) - MAX_SKIPPED
        skipped = skipped[:MAX_SKIPPED] + [{"name": "...", "type": "", "reason": "%d more names not saved" % extra}]
    return {"names": sorted(list(plain) + list(values)), "modules": modules, "skipped": skipped,
            "bytes": size}


def _dill_bytes(dill, values, main, limit, skipped):
    """values (dropping, and reporting in skipped, the ones dill refuses) as one dill
    pickle within limit bytes."""
    if not values:
        return b""
    try:
        return _dump(dill, values, main, limit)
    except TooLarge:
        raise
    except BaseException:
        for name in list(values):
            try:
                _pickler(dill, _Bounded(None, limit), main).dump(values[name])
            except TooLarge:
                raise
            except BaseException as exc:
                _skip(skipped, name, values.pop(name), "cannot be serialized: %s: %s" % (type(exc).__name__, exc))
        return _dump(dill, values, main, limit)


def _dump(dill, obj, main, limit):
    buf = io.BytesIO()
    _pickler(dill, _Bounded(buf, limit), main).dump(obj)
    return buf.getvalue()


def load(ns, main, path):
    """Load the names saved at path into ns; modules are imported again. Returns the
    report: names restored, skipped [{name, type, reason}] (modules that did not import)
    and the execution count saved with them."""
    import dill
    saved_main = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        with open(path, "rb") as f:
            data = pickle.load(f)
        if not isinstance(data, dict) or data.get("version") != VERSION:
            raise ValueError("not a namespace snapshot of version %d" % VERSION)
        values = {}
        if data.get("dill"):
            u = dill.Unpickler(io.BytesIO(data["dill"]))
            u._main = main
            values.update(u.load())
        for name, b in (data.get("plain") or {}).items():
            values[name] = pickle.loads(b)
    finally:
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    skipped = []
    for name, mod in (data.get("modules") or {}).items():
        try:
            ns[name] = importlib.import_module(mod)
        except BaseException as exc:
            skipped.append({"name": str(name), "type": "module", "reason": "import %s failed: %s" % (mod, exc)})
    ns.update(values)
    count = data.get("count")
    return {"names": sorted(values), "modules": data.get("modules") or {}, "skipped": skipped,
            "execution_count": count if type(count) is int else 0}
