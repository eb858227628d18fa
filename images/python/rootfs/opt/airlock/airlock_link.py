"""The controller's link to Airlock: newline-delimited JSON on one connected unix socket.

Airlock gives every container a listening socket of its own, bind-mounted at
AIRLOCK_LINK (/run/airlock/link.sock). The controller connects to it first thing
(connect(), before the zygote or any user code exists); Airlock accepts exactly that
one connection (it checks the peer's pid and uid), then closes the listener and
removes the socket, so nothing started later can connect. Requests arrive on the
socket and frames leave on it. Its fd is CLOEXEC and never inherited; fds 0 and 1
become /dev/null (stdout and stderr are only the container's log, never read as
frames). The socket reaching EOF means Airlock is gone: the dead man's switch.
"""

import json
import os
import selectors
import socket
import sys

LINK_ENV = "AIRLOCK_LINK"
HOLD_MAX = 64 << 10  # frames held (Link.hold) are written anyway once this much waits


def connect():
    """Connect to Airlock's link socket and return its fd (private, non-inheritable).
    Exits if there is none: Airlock gives every container one."""
    path = os.environ.pop(LINK_ENV, "")  # kernels and shells inherit the environment
    if not path:
        sys.exit("controller: no %s in the environment: this controller only talks to Airlock "
                 "over its link socket (an older Airlock? rebuild: make images)" % LINK_ENV)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # Python sockets are CLOEXEC
    try:
        s.connect(path)
    except ConnectionRefusedError:
        # Nobody listens: the Airlock that made this container is gone (killed while
        # the container booted). That is the dead man's switch, not a failure.
        sys.stderr.write("controller: nobody listens on the link %s: Airlock is gone, exiting\n" % path)
        sys.exit(0)
    except OSError as exc:
        sys.exit("controller: cannot connect to Airlock's link %s: %s (a daemon that does not "
                 "see Airlock's --link-dir?)" % (path, exc))
    return s.detach()


class Link:
    """Reads request lines and writes frames without blocking the loop."""

    def __init__(self, loop, fd, on_line, on_gone):
        self.loop = loop
        self.on_line = on_line  # on_line(bytes): one request line
        self.on_gone = on_gone  # Airlock went away (EOF, reset, broken pipe)
        self.on_flush = lambda: None  # after every write: the call may resume its pipes
        self.fd = fd
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
        os.set_blocking(self.fd, False)
        self.inbuf = bytearray()
        self.inscan = 0  # inbuf[:inscan] holds no newline
        self.out = bytearray()
        self.held = False  # frames wait for release (see hold)
        self.out_watched = False
        self.watching = False
        self._watch()

    def _watch(self):
        """Watch the socket for reading, and for writing while frames wait."""
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if self.out_watched else 0)
        if self.watching:
            self.loop.unwatch(self.fd)
        self.loop.watch(self.fd, events, self._on_event)
        self.watching = True

    def backlog(self):
        """Bytes of frames not yet written (Airlock not reading)."""
        return len(self.out)

    def emit(self, obj):
        """Send one frame (held, see hold, while at most HOLD_MAX bytes wait)."""
        self.out += json.dumps(obj, separators=(",", ":")).encode() + b"\n"
        if not self.held or len(self.out) > HOLD_MAX:
            self.flush()

    def hold(self):
        """Keep the frames emitted from now on until release (or until HOLD_MAX bytes
        wait): a call's frames then reach Airlock in fewer writes, one wake-up of its
        reader rather than one a frame. The caller releases them soon: a call's started
        frame within airlock_call.STARTED_HOLD_S, its last output with its done frame."""
        self.held = True

    def release(self):
        """Write the held frames."""
        if self.held:
            self.held = False
            self.flush()

    def flush(self, *_):
        """Write what the socket takes now; watch it for the rest."""
        while self.out:
            try:
                n = os.write(self.fd, self.out[:1 << 20])
            except BlockingIOError:
                break
            except (BrokenPipeError, ConnectionResetError):
                self.on_gone()
                return
            del self.out[:n]
        want = bool(self.out)
        if want != self.out_watched:
            self.out_watched = want
            self._watch()
        self.on_flush()

    def flush_blocking(self):
        """Write every pending frame, waiting as needed (the controller is about to exit)."""
        if self.out:
            os.set_blocking(self.fd, True)
            try:
                os.write(self.fd, self.out)
            except OSError:
                pass

    def _on_event(self, fd, *rest):
        """The selector's callback: the socket is readable and/or writable."""
        if self.out_watched:
            self.flush()
        self._on_read(fd)

    def _on_read(self, _fd):
        try:
            data = os.read(self.fd, 1 << 20)
        except BlockingIOError:
            return
        except ConnectionResetError:
            data = b""
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
