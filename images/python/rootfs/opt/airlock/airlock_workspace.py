"""/workspace when it is the controller's own tmpfs (AIRLOCK_WORKSPACE=tmpfs): a call's
archive is unpacked into it before any kernel takes the call, and it is emptied after
every one-shot call (a session's stays: Airlock sends a session's input folder with its
first exec). Otherwise it is Airlock's read-only input folder, never touched.
See PROTOCOL.md "Archives".
"""

import base64
import os

import airlock_files as files
import airlock_paths as paths
from airlock_loop import now

PATH = "/workspace"


class CallRefused(Exception):
    """A call refused before anything ran: message and a core error code."""

    def __init__(self, message, code="bad_request"):
        super().__init__(message)
        self.code = code


def load_archive():
    """The unpacker, imported only where archives can come (tarfile, zipfile and gzip cost
    tens of ms to load): the controller loads it while the zygote preloads."""
    import airlock_archive
    return airlock_archive


class Workspace:
    """The controller's own /workspace, or an input folder it leaves alone."""

    def __init__(self, owned, path=PATH):
        self.owned = owned
        self.path = path
        self.stream = None  # an input being streamed in (airlock_stream.Stream), or None

    def reset(self):
        """Empty it and make it writable for unpacking; reports whether it is empty."""
        try:
            paths.chmod(self.path, 0o755)
        except OSError:
            pass
        files.clear_dir(self.path)
        try:
            return not paths.listdir(self.path)
        except OSError:
            return False

    def seal(self):
        """An empty workspace is read-only, like the image's own /workspace folder."""
        try:
            paths.chmod(self.path, 0o555)
        except OSError:
            pass

    def clean(self):
        """After a one-shot call: empty and read-only again (an owned workspace only)."""
        if self.owned:
            self.reset()
            self.seal()

    def unpack(self, req):
        """Unpack the request's archive into the emptied workspace; returns what was
        unpacked ({"format", "entries", "bytes", "unpack_ms"}). Raises CallRefused, leaving the
        workspace empty."""
        t0 = now()
        data, req["archive"] = req.get("archive"), None
        if not self.owned:
            raise CallRefused("this container's /workspace is an input folder, not its own: it cannot "
                          "take an archive", "internal")
        if not isinstance(data, str):
            raise CallRefused("archive must be base64 text")
        try:
            raw = base64.b64decode(data, validate=True)
        except ValueError:
            raise CallRefused("archive is not valid base64") from None
        del data
        if not self.reset():
            raise CallRefused("the workspace could not be emptied", "internal")

        def bound(key, default):
            v = req.get(key)
            return int(v) if isinstance(v, int) and v > 0 else default

        archive = load_archive()
        try:
            info = archive.unpack(self.path, raw, bound("archive_max_entries", archive.MAX_ENTRIES),
                                  bound("archive_max_bytes", archive.MAX_BYTES),
                                  bound("archive_max_ratio", archive.MAX_RATIO))
        except archive.Refused as exc:
            self.clean()
            raise CallRefused(str(exc)) from None
        except Exception as exc:  # a bug: still leave nothing half unpacked behind
            self.clean()
            raise CallRefused("unpacking the archive failed: %s: %s" % (type(exc).__name__, exc), "internal") from None
        info["unpack_ms"] = round((now() - t0) * 1000, 3)
        return info

    # --- streamed inputs (stage ops; PROTOCOL.md "Streamed inputs") -------------------
    def stage(self, req):
        """One chunk of a streamed input: offset 0 empties the workspace and starts the
        unpacker; later chunks must follow on exactly. Returns {"size": bytes received}.
        Raises CallRefused (the stream is then dropped and the workspace emptied)."""
        if req.get("abort"):
            self.abort_stream()
            return {"size": 0}
        data = req.get("data", "")
        if not self.owned:
            raise CallRefused("this container's /workspace is an input folder, not its own: it cannot "
                              "take a streamed input", "internal")
        if not isinstance(data, str):
            self.abort_stream()
            raise CallRefused("stage: data must be base64 text")
        try:
            raw = base64.b64decode(data, validate=True)
        except ValueError:
            self.abort_stream()
            raise CallRefused("stage: data is not valid base64") from None
        del data
        offset = req.get("offset") or 0
        if offset == 0:
            self._start(req, raw)
        elif self.stream is None or offset != self.stream.received:
            self.abort_stream()
            raise CallRefused("stage: a chunk at offset %r does not follow on from the streamed input" % offset,
                              "internal")
        s = self.stream
        s.add(raw)
        if s.received > s.packed:
            self.abort_stream()
            raise CallRefused("stage: the streamed input is larger than the %d bytes announced" % s.packed)
        why = s.failed()
        if why:
            self.abort_stream()
            raise CallRefused(why, "bad_request" if s.refused else "internal")
        return {"size": s.received}

    def _start(self, req, head):
        """Begin a new streamed input (dropping any unfinished one) into the emptied workspace."""
        self.abort_stream()
        if not self.reset():
            raise CallRefused("the workspace could not be emptied", "internal")

        def bound(key, default):
            v = req.get(key)
            return int(v) if isinstance(v, int) and v > 0 else default

        archive = load_archive()
        import airlock_stream
        packed = bound("archive_size", 0)
        if not packed:
            raise CallRefused("stage: the first chunk must carry archive_size")
        self.stream = airlock_stream.Stream(
            self.path, archive, bytes(head[:8]), packed, bound("archive_max_entries", archive.MAX_ENTRIES),
            bound("archive_max_bytes", archive.MAX_BYTES), bound("archive_max_ratio", archive.MAX_RATIO))
        self.stream_t0 = now()

    def abort_stream(self):
        """Drop an unfinished streamed input and empty the workspace; a no-op without one."""
        s, self.stream = self.stream, None
        if s is not None:
            s.abort()
            self.clean()

    def finish_stream(self, req):
        """The exec that follows a streamed input: wait until everything is unpacked;
        returns what was ({"format", "entries", "bytes", "unpack_ms"}). Raises CallRefused,
        leaving the workspace empty."""
        s, self.stream = self.stream, None
        want = req.get("archive_stream")
        if s is None:
            self.clean()
            raise CallRefused("the exec names a streamed input but none was staged", "internal")
        if want != s.received:
            s.abort()
            self.clean()
            raise CallRefused("the streamed input is %d bytes, not the %r the exec names" % (s.received, want),
                              "internal")
        why = s.finish()
        if why:
            self.clean()
            raise CallRefused(why, "bad_request" if s.refused else "internal")
        info = dict(s.info)
        info["unpack_ms"] = round((now() - self.stream_t0) * 1000, 3)
        return info
