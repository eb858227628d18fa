"""The controller's link to Airlock: newline-delimited JSON on its own stdin and stdout.

Requests arrive on stdin, frames leave on stdout (PROTOCOL.md). Both are moved to
private CLOEXEC fds at once (0 and 1 become /dev/null), so no process the controller
starts inherits them. Stdin reaching EOF means Airlock is gone: the dead man's switch.
"""

import json
import os
import selectors


class Link:
    """Reads request lines and writes frames without blocking the loop."""

    def __init__(self, loop, on_line, on_gone):
        self.loop = loop
        self.on_line = on_line  # on_line(bytes): one request line
        self.on_gone = on_gone  # Airlock went away (stdin EOF, stdout broken)
        self.on_flush = lambda: None  # after every write: the call may resume its pipes
        self.infd = os.dup(0)
        self.outfd = os.dup(1)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
        os.set_blocking(self.infd, False)
        os.set_blocking(self.outfd, False)
        self.inbuf = bytearray()
        self.inscan = 0  # inbuf[:inscan] holds no newline
        self.out = bytearray()
        self.out_watched = False
        loop.watch(self.infd, selectors.EVENT_READ, self._on_stdin)

    def backlog(self):
        """Bytes of frames not yet written (Airlock not reading)."""
        return len(self.out)

    def emit(self, obj):
        """Send one frame."""
        self.out += json.dumps(obj, separators=(",", ":")).encode() + b"\n"
        self.flush()

    def flush(self, *_):
        """Write what the pipe takes now; watch stdout for the rest."""
        while self.out:
            try:
                n = os.write(self.outfd, self.out[:1 << 20])
            except BlockingIOError:
                break
            except BrokenPipeError:
                self.on_gone()
                return
            del self.out[:n]
        want = bool(self.out)
        if want != self.out_watched:
            if want:
                self.loop.watch(self.outfd, selectors.EVENT_WRITE, self.flush)
            else:
                self.loop.unwatch(self.outfd)
            self.out_watched = want
        self.on_flush()

    def flush_blocking(self):
        """Write every pending frame, waiting as needed (the controller is about to exit)."""
        if self.out:
            os.set_blocking(self.outfd, True)
            try:
                os.write(self.outfd, self.out)
            except OSError:
                pass

    def _on_stdin(self, _fd):
        try:
            data = os.read(self.infd, 1 << 20)
        except BlockingIOError:
            return
        if not data:
            self.on_gone()  # Airlock is gone: dead man's switch
            return
        self.inbuf += data
        while True:
            # A long line (an archive) arrives in many reads: scan only the new bytes.
            i = self.inbuf.find(b"\n", self.inscan)
            if i < 0:
                self.inscan = len(self.inbuf)
                break
            line = bytes(self.inbuf[:i])
            del self.inbuf[:i + 1]
            self.inscan = 0
            if line.strip():
                self.on_line(line)
