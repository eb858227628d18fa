"""One call's pipes: stdout and stderr read to "out" frames; stdin, or the answers to
input(), written.

Per call the controller makes new pipes and sends their write ends (and the read end of
stdin or of the answers pipe) with the exec, so nothing written during call N can be
reported in call N+1, and no answer meant for call N can reach call N+1. The
read ends are watched by the loop; output is decoded as UTF-8 (errors replaced, NUL
made U+FFFD), counted against the hard output limit and forwarded live, small writes
coalesced for up to COALESCE_S. While more than OUT_HIGH bytes of frames are unsent
(Airlock not reading) the pipes are not read (the program blocks on write).
"""

import codecs
import json
import fcntl
import os
import selectors

from airlock_loop import now

COALESCE_S = 0.004  # live output is sent at most this late ...
COALESCE_BYTES = 32 << 10  # ... or once this much is pending
SMALL_READ = 16384  # a read under this lets the pipe fill for COALESCE_S before the next
OUT_HIGH = 4 << 20  # stop reading the pipes while this much is unsent to Airlock ...
OUT_LOW = 1 << 20  # ... until it is below this
EOF_GRACE_S = 0.3
F_SETPIPE_SZ = 1031


class Output:
    """The pipes of one call and what is pending of them."""

    def __init__(self, loop, link, call_id, hard, running, on_over):
        self.loop = loop
        self.link = link
        self.id = call_id
        self.hard = hard  # hard output limit per stream
        self.running = running  # running(): the call's code has not finished
        self.on_over = on_over  # on_over(stream): a stream passed the hard limit
        self.pipes = {}  # read fd -> stream name
        self.decoders = {"stdout": codecs.getincrementaldecoder("utf-8")("replace"),
                         "stderr": codecs.getincrementaldecoder("utf-8")("replace")}
        self.counts = {"stdout": 0, "stderr": 0}
        self.watched = set()  # pipe fds in the loop's selector
        self.nap = {}  # pipe fd -> monotonic time until which it is not read (coalescing)
        self.pend = []  # [[stream, start, bytearray]] output read, not yet sent, in order (start: byte offset in its stream)
        self.pend_bytes = 0
        self.pend_since = 0.0
        self.paused = False
        self.stdin = None  # Feed of the call's stdin, written once and closed ...
        self.answers = None  # ... or of its answers to input() (allow_stdin)
        self.kernel_fds = []  # [stdout w, stderr w, (stdin r | answers r)]: sent with the exec, then closed
        self._reads = []

    def open(self, stdin, answers=False):
        """Make the call's pipes; kernel_fds are the ends its code gets. stdin (str) is
        fed to it; else with answers, the third end is the answers pipe (see answer)."""
        r_out, w_out = os.pipe2(os.O_CLOEXEC)
        r_err, w_err = os.pipe2(os.O_CLOEXEC)
        self.kernel_fds = [w_out, w_err]
        self._reads = [(r_out, "stdout"), (r_err, "stderr")]
        if isinstance(stdin, str) or answers:
            r_in, w_in = os.pipe2(os.O_CLOEXEC)
            self.kernel_fds.append(r_in)
            if isinstance(stdin, str):
                self.stdin = Feed(self.loop, w_in, stdin.encode(), close_when_written=True)
            else:
                self.answers = Feed(self.loop, w_in, b"", close_when_written=False)

    def start(self):
        """The code has its ends: close ours of them and start reading (and feeding stdin)."""
        for fd in self.kernel_fds:
            os.close(fd)
        self.kernel_fds = []
        for fd, name in self._reads:
            os.set_blocking(fd, False)
            try:
                fcntl.fcntl(fd, F_SETPIPE_SZ, 1 << 20)
            except OSError:
                pass
            self.pipes[fd] = name
        if self.stdin is not None:
            self.stdin.start()
        self.update_pause()
        self.loop.tickers.append(self)

    # --- reading --------------------------------------------------------------------
    def update_pause(self):
        """Pause or resume reading as Airlock's backlog crosses OUT_HIGH / OUT_LOW."""
        backlog = self.link.backlog()
        if not self.paused and backlog > OUT_HIGH:
            self.paused = True
        elif self.paused and backlog < OUT_LOW:
            self.paused = False
        self.sync()

    def sync(self):
        """Watch exactly the pipes that are neither paused nor napping."""
        t = now()
        for fd in list(self.pipes):
            want = not self.paused and self.nap.get(fd, 0) <= t
            if want and fd not in self.watched:
                self.loop.watch(fd, selectors.EVENT_READ, self._on_pipe)
                self.watched.add(fd)
            elif not want and fd in self.watched:
                self.loop.unwatch(fd)
                self.watched.discard(fd)

    def prepare(self):
        """Loop ticker: watch the right pipes; wake for the first nap's end or flush."""
        self.sync()
        wakes = [t for fd, t in self.nap.items() if fd in self.pipes and fd not in self.watched]
        if self.pend_bytes:
            wakes.append(self.pend_since + COALESCE_S)
        return min(wakes) if wakes else None

    def tick(self):
        """Loop ticker: send output held for coalescing once it is due."""
        if self.pend_bytes and now() >= self.pend_since + COALESCE_S:
            self.flush_pending()

    def _on_pipe(self, fd):
        if fd not in self.pipes:
            return
        n = self.counts[self.pipes[fd]]
        if self._read_once(fd) and self.counts.get(self.pipes.get(fd), n) - n < SMALL_READ and self.running():
            # A small read: let the pipe fill a little before reading again, so that a
            # program writing many tiny pieces costs few reads and frames.
            self.nap[fd] = now() + COALESCE_S
            self.sync()

    def _read_once(self, fd, size=1 << 16):
        try:
            data = os.read(fd, size)
        except BlockingIOError:
            return False
        except OSError:
            data = b""
        stream = self.pipes[fd]
        if not data:
            self._close_pipe(fd)
            return False
        before = self.counts[stream]
        self.counts[stream] += len(data)
        if self.counts[stream] > self.hard:
            data = data[:max(0, self.hard - before)]
            self.on_over(stream)
        if data:
            self.forward(stream, before, data)
        return True

    def drain_available(self):
        """Read whatever the pipes hold now (the kernel flushed before its message)."""
        if self.paused:
            return
        for fd in list(self.pipes):
            for _ in range(64):
                if fd not in self.pipes or not self._read_once(fd):
                    break

    def read_to(self, marks):
        """Read each stream's pipe up to its mark (the bytes the kernel had written to it
        when it sent a message), never past it: what it wrote after is read later. Only
        what the pipe holds now is read (a mark past it is the code's own doing)."""
        for fd in list(self.pipes):
            stream = self.pipes[fd]
            for _ in range(64):
                want = marks[stream] - self.counts[stream]
                if want <= 0 or fd not in self.pipes or not self._read_once(fd, min(want, 1 << 16)):
                    break

    def flush_to(self, marks):
        """Send the output before marks ({stream: byte offset}) now; keep what was read
        past them (written after the kernel's message) pending, to follow the message."""
        self.read_to(marks)
        before, after = [], []
        for stream, start, buf in self.pend:
            k = max(0, min(len(buf), marks[stream] - start))
            if k:
                before.append([stream, start, buf[:k]])
            if k < len(buf):
                after.append([stream, start + k, buf[k:]])
        self.pend = before
        self.flush_pending()
        for stream, start, buf in after:
            self.forward(stream, start, buf)

    def _close_pipe(self, fd):
        stream = self.pipes.pop(fd)
        if fd in self.watched:
            self.loop.unwatch(fd)
            self.watched.discard(fd)
        os.close(fd)

    # --- sending --------------------------------------------------------------------
    def forward(self, stream, start, data):
        """Queue output read from stream at byte offset start; small writes are coalesced
        for up to COALESCE_S into one frame."""
        if not data:
            return
        last = self.pend[-1] if self.pend else None
        if last is not None and last[0] == stream and last[1] + len(last[2]) == start:
            last[2] += data
        else:
            self.pend.append([stream, start, bytearray(data)])
        if not self.pend_bytes:
            self.pend_since = now()
        self.pend_bytes += len(data)
        if self.pend_bytes >= COALESCE_BYTES:
            self.flush_pending()

    def flush_pending(self, final=False):
        """Send every pending piece now, in order (final: the streams' ends, so a
        truncated UTF-8 sequence at the end is sent too, replaced)."""
        for stream, _, buf in self.pend:
            self._emit(stream, self.decoders[stream].decode(bytes(buf)))
        self.pend = []
        self.pend_bytes = 0
        if final:
            for stream in ("stdout", "stderr"):
                self._emit(stream, self.decoders[stream].decode(b"", final=True))

    def _emit(self, stream, text):
        if text:
            self.link.emit({"t": "out", "id": self.id, "s": stream, "d": text.replace("\x00", "\ufffd")})

    # --- stdin and answers ----------------------------------------------------------
    def answer(self, value):
        """Queue an answer to input() (a str) on the answers pipe: one line of JSON, so a
        value may hold newlines. False if the call has no answers pipe."""
        if self.answers is None or self.answers.fd is None:
            return False
        self.answers.put((json.dumps(value) + "\n").encode("ascii"))
        return True

    def close_inputs(self):
        """Stop feeding stdin and answers (the code is done)."""
        for feed in (self.stdin, self.answers):
            if feed is not None:
                feed.close()

    # --- the end --------------------------------------------------------------------
    def drain(self):
        """After the call's processes are gone: read the pipes to EOF, or what they hold
        once EOF_GRACE_S has passed (a process kept a write end open, or this container, at
        low CPU shares, was not scheduled until the grace had passed), close them and send
        everything. Nothing more is coalesced: no naps."""
        self.nap.clear()
        deadline = now() + EOF_GRACE_S
        while self.pipes and now() < deadline:
            if self.paused:
                # Airlock is not reading: the grace period starts once it reads again.
                deadline = now() + EOF_GRACE_S
                self.loop.poll(0.05)
            else:
                self.loop.poll(deadline - now())
        self.drain_available()
        for fd in list(self.pipes):
            self._close_pipe(fd)
        self.flush_pending(final=True)
        self.loop.tickers.remove(self)


class Feed:
    """A pipe the controller writes to without blocking the loop: what was put is written
    as the reader takes it; close_when_written closes it once all of it is (stdin)."""

    def __init__(self, loop, fd, data, close_when_written):
        self.loop = loop
        self.fd = fd
        self.data = data
        self.close_when_written = close_when_written
        self.watched = False
        os.set_blocking(fd, False)

    def start(self):
        """Begin writing what was put before the code had its end."""
        self._watch()

    def put(self, data):
        """Write data after what is pending."""
        self.data += data
        self._watch()

    def _watch(self):
        if self.fd is not None and not self.watched and (self.data or self.close_when_written):
            self.loop.watch(self.fd, selectors.EVENT_WRITE, self._on_writable)
            self.watched = True

    def _on_writable(self, fd):
        try:
            n = os.write(fd, self.data[:1 << 16])
            self.data = self.data[n:]
        except BlockingIOError:
            return
        except OSError:
            self.data = b""
        if not self.data:
            if self.close_when_written:
                self.close()
            else:
                self.loop.unwatch(fd)
                self.watched = False

    def close(self):
        """Stop writing and close the pipe."""
        if self.fd is not None:
            if self.watched:
                self.loop.unwatch(self.fd)
                self.watched = False
            os.close(self.fd)
            self.fd = None
