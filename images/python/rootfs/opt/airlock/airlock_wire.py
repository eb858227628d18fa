"""JSON messages over a unix SOCK_SEQPACKET socket, with fds passed by SCM_RIGHTS.

Used between the controller, the zygote and the kernels (never on the controller's
stdin/stdout, which speak newline-delimited JSON). A message is UTF-8 JSON cut into
datagrams of at most CHUNK bytes, each prefixed by one byte: b"M" (more follows) or
b"E" (last). Datagram boundaries are kept by the socket, so bytes written to the
socket by anything else (user code doing os.write on every fd) form datagrams of
their own that fail to parse and are dropped: they cannot desynchronise the stream.
File descriptors travel as SCM_RIGHTS on a message's first datagram; the receiver
collects them in arrival order and the message itself says how many it carries.
"""

import array
import json
import socket

CHUNK = 60 << 10
MAX_MESSAGE = 96 << 20
_MAX_FDS = 16


def pair():
    """A connected socketpair for this protocol."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def send(sock, obj, fds=()):
    """Send one message (blocking, honours the socket's timeout), optionally with fds."""
    data = json.dumps(obj, separators=(",", ":")).encode()
    view = memoryview(data)
    first = True
    while True:
        part, view = view[:CHUNK], view[CHUNK:]
        dgram = (b"M" if len(view) else b"E") + part
        if first and fds:
            sock.sendmsg([dgram], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        else:
            sock.sendmsg([dgram])
        first = False
        if not len(view):
            return


class Reader:
    """Collects datagrams and fds from a socket and joins them into messages."""

    def __init__(self, sock, max_message=MAX_MESSAGE):
        self.sock = sock
        self.max_message = max_message
        self.partial = []
        self.size = 0
        self.ready = []
        self.fds = []
        self.eof = False
        self.dropped = 0

    def fill(self):
        """Read one datagram (the socket must be readable). Returns False at EOF."""
        try:
            data, anc, flags, _ = self.sock.recvmsg(CHUNK + 64, socket.CMSG_SPACE(_MAX_FDS * 4))
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            self.eof = True
            return False
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                a = array.array("i")
                a.frombytes(payload[: len(payload) - len(payload) % a.itemsize])
                self.fds.extend(a)
        if not data and not anc:
            self.eof = True
            return False
        if flags & socket.MSG_TRUNC or data[:1] not in (b"M", b"E"):
            self._drop()
            return True
        self.partial.append(data[1:])
        self.size += len(data) - 1
        if self.size > self.max_message:
            self._drop()
        elif data[:1] == b"E":
            raw = b"".join(self.partial)
            self.partial, self.size = [], 0
            try:
                obj = json.loads(raw)
            except ValueError:
                obj = None
            if isinstance(obj, dict):
                self.ready.append(obj)
            else:
                self.dropped += 1
        return True

    def _drop(self):
        self.partial, self.size = [], 0
        self.dropped += 1

    def next(self):
        """The next complete message, or None."""
        return self.ready.pop(0) if self.ready else None

    def take_fds(self, n):
        """Pop the first n received fds (fewer if fewer arrived)."""
        got, self.fds = self.fds[:n], self.fds[n:]
        return got

    def recv(self):
        """Blocking: the next message, or None at EOF."""
        while True:
            msg = self.next()
            if msg is not None:
                return msg
            if not self.fill():
                return None
