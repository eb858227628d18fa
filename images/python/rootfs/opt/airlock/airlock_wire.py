"""JSON messages over a unix SOCK_SEQPACKET socket, with fds passed by SCM_RIGHTS.

Used between the controller, the zygote and the kernels (never on the controller's
link to Airlock, which speaks newline-delimited JSON). A message is UTF-8 JSON cut into
datagrams of at most CHUNK bytes, each prefixed by one byte: b"M" (more follows) or
b"E" (last). Datagram boundaries are kept by the socket, so bytes written to the
socket by anything else (user code doing os.write on every fd) form datagrams of
their own that fail to parse and are dropped: they cannot desynchronise the stream.
File descriptors travel as SCM_RIGHTS on a message's first datagram; the receiver
collects them in arrival order and the message itself says how many it carries.

A kernel runs user code in the same interpreter, so this module must not change
behaviour when that code changes names: it looks builtins up in a private copy
(taken when it is imported, in the zygote, before any user code ran) and encodes and
decodes with the C encoder and scanner of _json, never through the json module's
attributes. User code never gets a reference to this module (the kernel drops it
from sys.modules); see PROTOCOL.md "What a kernel can and cannot forge".
"""

__builtins__ = dict(vars(__import__("builtins")))

import array  # noqa: E402
import json.decoder  # noqa: E402
import socket  # noqa: E402
from _json import encode_basestring_ascii, make_encoder  # noqa: E402
from _json import make_scanner  # noqa: E402

CHUNK = 60 << 10
MAX_MESSAGE = 96 << 20
_MAX_FDS = 16
_SOL_SOCKET = socket.SOL_SOCKET
_SCM_RIGHTS = socket.SCM_RIGHTS
_MSG_TRUNC = socket.MSG_TRUNC
_CMSG_SPACE = socket.CMSG_SPACE(_MAX_FDS * 4)


def _unencodable(obj):
    raise TypeError("cannot encode %s" % type(obj).__name__)


_encode = make_encoder(None, _unencodable, encode_basestring_ascii, None, ":", ",", False, False, False)
_scan = make_scanner(json.decoder.JSONDecoder())


def dumps(obj):
    """Compact ASCII JSON of obj (dicts, lists, str, int, float, bool, None)."""
    return "".join(_encode(obj, 0))


def loads(text):
    """The JSON value text holds (nothing but that value), or raise ValueError."""
    try:
        obj, end = _scan(text, 0)
    except StopIteration:
        raise ValueError("not JSON") from None
    if end != len(text):
        raise ValueError("extra data after the JSON value")
    return obj


def pair():
    """A connected socketpair for this protocol."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def send(sock, obj, fds=()):
    """Send one message (blocking, honours the socket's timeout), optionally with fds."""
    view = memoryview(dumps(obj).encode())
    first = True
    while True:
        part, view = view[:CHUNK], view[CHUNK:]
        dgram = (b"M" if len(view) else b"E") + part
        if first and fds:
            sock.sendmsg([dgram], [(_SOL_SOCKET, _SCM_RIGHTS, array.array("i", fds))])
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
            data, anc, flags, _ = self.sock.recvmsg(CHUNK + 64, _CMSG_SPACE)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            self.eof = True
            return False
        for level, kind, payload in anc:
            if level == _SOL_SOCKET and kind == _SCM_RIGHTS:
                a = array.array("i")
                a.frombytes(payload[: len(payload) - len(payload) % a.itemsize])
                self.fds.extend(a)
        if not data and not anc:
            self.eof = True
            return False
        if flags & _MSG_TRUNC or data[:1] not in (b"M", b"E"):
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
                obj = loads(raw.decode("utf-8"))
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
