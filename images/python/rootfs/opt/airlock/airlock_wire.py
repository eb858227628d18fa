"""Length-prefixed JSON messages over a unix stream socket, with fds passed by SCM_RIGHTS.

Used between the controller, the zygote and the kernels (never on the controller's
stdin/stdout, which speak newline-delimited JSON). A message is a 4-byte big-endian
length followed by that many bytes of UTF-8 JSON. File descriptors travel as
SCM_RIGHTS ancillary data attached to the first byte of a message; the receiver
collects them in arrival order and the message itself says how many it carries.
"""

import array
import json
import socket
import struct

_HDR = struct.Struct("!I")
MAX_MESSAGE = 96 << 20
_MAX_FDS = 16


def send(sock, obj, fds=()):
    """Send one message (blocking, honours the socket's timeout), optionally with fds."""
    data = json.dumps(obj, separators=(",", ":")).encode()
    buf = _HDR.pack(len(data)) + data
    if fds:
        n = sock.sendmsg([buf], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        buf = buf[n:]
    if buf:
        sock.sendall(buf)


class Reader:
    """Accumulates bytes and fds from a socket and splits them into messages."""

    def __init__(self, sock, max_message=MAX_MESSAGE):
        self.sock = sock
        self.max_message = max_message
        self.buf = bytearray()
        self.fds = []
        self.eof = False

    def fill(self):
        """Read once (the socket must be readable). Returns False at EOF or on a bad stream."""
        try:
            data, anc, _flags, _ = self.sock.recvmsg(1 << 20, socket.CMSG_SPACE(_MAX_FDS * 4))
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
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def next(self):
        """The next complete message, or None. Raises ValueError on an oversized or bad one."""
        if len(self.buf) < 4:
            return None
        (n,) = _HDR.unpack_from(self.buf)
        if n > self.max_message:
            raise ValueError("message of %d bytes is over the %d-byte limit" % (n, self.max_message))
        if len(self.buf) < 4 + n:
            return None
        raw = bytes(self.buf[4:4 + n])
        del self.buf[:4 + n]
        obj = json.loads(raw)
        if not isinstance(obj, dict):
            raise ValueError("message is not an object")
        return obj

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
