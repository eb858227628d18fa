"""The sandbox's way to Airlock's egress proxy (issue 29): a relay from a loopback port to the door.

A container with a network policy has no network (NetworkMode none: loopback only, no DNS,
no route); Airlock bind-mounts a unix socket of its egress proxy (the door,
AIRLOCK_EGRESS_SOCKET) into it. The controller relays 127.0.0.1:AIRLOCK_EGRESS_PORT to that
socket, so programs use it as an ordinary HTTP proxy (HTTP_PROXY, HTTPS_PROXY, pip's
PIP_PROXY point at it). The proxy checks everything; the relay only moves bytes. It runs in
threads of the controller (not a process a call's sweep would kill), started before any user
code, so no call can take its port first.
"""

import os
import socket
import threading

MAX_CONNS = 128  # relayed connections at once; the proxy has its own per-call caps
BUF = 64 << 10


def _pump(src, dst):
    """Copy src to dst until EOF or an error, then half-close dst."""
    try:
        while True:
            data = src.recv(BUF)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _serve(client, path, slots):
    """Relay one client connection to the door, both ways."""
    try:
        door = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            door.connect(path)
        except OSError:
            door.close()
            return
        back = threading.Thread(target=_pump, args=(door, client), daemon=True)
        back.start()
        _pump(client, door)
        back.join()
        door.close()
    finally:
        client.close()
        slots.release()


def _accept(ln, path):
    slots = threading.BoundedSemaphore(MAX_CONNS)
    while True:
        try:
            client, _ = ln.accept()
        except OSError:
            continue
        if not slots.acquire(blocking=False):
            client.close()
            continue
        threading.Thread(target=_serve, args=(client, path, slots), daemon=True).start()


def start():
    """Start the relay when the container has a door; returns the port, or None."""
    path = os.environ.get("AIRLOCK_EGRESS_SOCKET")
    port = os.environ.get("AIRLOCK_EGRESS_PORT")
    if not path or not port:
        return None
    ln = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ln.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ln.bind(("127.0.0.1", int(port)))
    ln.listen(64)
    ln.set_inheritable(False)
    threading.Thread(target=_accept, args=(ln, path), daemon=True, name="egress-relay").start()
    return int(port)


def user_site():
    """The user site pip installs into when PYTHONUSERBASE is set (a session's packages,
    under /work), made before the zygote starts so that Python puts it on sys.path."""
    base = os.environ.get("PYTHONUSERBASE")
    if not base:
        return None
    import sys
    return os.path.join(base, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
