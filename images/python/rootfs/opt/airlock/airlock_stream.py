"""A streamed input (stage ops): a tar sent in chunks, unpacked into /workspace as it arrives.

An input folder can be far larger than one request line should be, so Airlock sends its tar
in chunks ({"op": "stage", "offset", "data", ...}, one done each) and then the exec with
"archive_stream": the total size. The controller never holds the whole tar: a thread of its
own unpacks (airlock_archive.unpack_stream) from a small queue of chunks that the loop fills,
so the workspace takes the files' bytes and little more. Nothing of the owner runs meanwhile
(stage ops are queued like exec, and the thread is joined before any kernel takes the call).
See PROTOCOL.md "Streamed inputs".
"""

import io
import queue
import threading

QUEUED_CHUNKS = 4  # chunks waiting for the unpacking thread (each at most one request's data)


class _Feed(io.RawIOBase):
    """The chunks the loop hands over, read by the unpacking thread as one stream."""

    def __init__(self):
        self.q = queue.Queue(maxsize=QUEUED_CHUNKS)
        self.cur = memoryview(b"")
        self.eof = False

    def readable(self):
        return True

    def readinto(self, b):
        while not len(self.cur):
            if self.eof:
                return 0
            item = self.q.get()
            if item is None:
                self.eof = True
                return 0
            self.cur = memoryview(item)
        n = min(len(b), len(self.cur))
        b[:n] = self.cur[:n]
        self.cur = self.cur[n:]
        return n


class Stream:
    """One input being streamed into root: chunks in, then finish() or abort()."""

    def __init__(self, root, archive, head, packed, max_entries, max_bytes, max_ratio):
        self.received = 0
        self.packed = packed
        self.info = None
        self.refused = None  # the unpacker's refusal (an archive.Refused message)
        self.error = None  # anything else the thread raised
        self.feed = _Feed()
        self._archive = archive
        args = (root, io.BufferedReader(self.feed, 1 << 16), head, packed, max_entries, max_bytes, max_ratio)
        self.thread = threading.Thread(target=self._run, args=args, name="airlock-unpack", daemon=True)
        self.thread.start()

    def _run(self, *args):
        try:
            self.info = self._archive.unpack_stream(*args)
        except self._archive.Refused as exc:
            self.refused = str(exc)
        except BaseException as exc:  # noqa: BLE001 - reported to Airlock, never lost
            self.error = "%s: %s" % (type(exc).__name__, exc)

    def failed(self):
        """The refusal or error that ended the unpacking early, or None."""
        if self.thread.is_alive():
            return None
        return self.refused or self.error

    def _put(self, item):
        """Hand item to the thread; drops it once the thread has ended (it failed)."""
        while self.thread.is_alive():
            try:
                self.feed.q.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def add(self, data):
        """One more chunk."""
        self.received += len(data)
        self._put(data)

    def finish(self):
        """Mark the end and wait for the thread; its refusal, error or None."""
        self._put(None)
        self.thread.join()
        return self.refused or self.error

    def abort(self):
        """End the stream early (what it wrote is for the caller to remove)."""
        self._put(None)
        self.thread.join()
