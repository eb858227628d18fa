"""The sandbox side of the egress integration test: reads a JSON list of
checks on stdin, runs each, prints one JSON line per check. HTTP goes
through urllib, which takes HTTP_PROXY/HTTPS_PROXY from the environment
like any program in a sandbox would."""
import json
import socket
import ssl
import sys
import threading
import urllib.error
import urllib.request

CA = "/t/cert.pem"


def get(c):
    ctx = ssl.create_default_context(cafile=CA)
    try:
        with urllib.request.urlopen(c["url"], timeout=20, context=ctx) as r:
            return {"status": r.status, "body": r.read().decode()}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "reason": e.headers.get("X-Airlock-Egress", "")}
    except Exception as e:
        return {"error": repr(e)}


def front(c):
    """CONNECT to one name, then a TLS handshake naming another."""
    host, port = c["proxy"].rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=20)
    s.sendall(f"CONNECT {c['connect']} HTTP/1.1\r\nHost: {c['connect']}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        if not chunk:
            return {"error": "proxy closed before answering"}
        head += chunk
    status = head.split(b" ")[1].decode()
    ctx = ssl.create_default_context(cafile=CA)
    try:
        t = ctx.wrap_socket(s, server_hostname=c["sni"])
        t.sendall(b"GET / HTTP/1.1\r\nHost: " + c["sni"].encode() + b"\r\n\r\n")
        return {"connect": status, "body": t.recv(4096).decode(errors="replace")}
    except Exception as e:
        return {"connect": status, "error": repr(e)}


def direct(c):
    """A TCP connection that bypasses the proxy."""
    try:
        socket.create_connection((c["host"], c["port"]), timeout=c["timeout"]).close()
        return {"connected": True}
    except Exception as e:
        return {"error": repr(e)}


def dns(c):
    """A name lookup from inside, in a thread so that a hanging resolver
    counts as a failure after the timeout."""
    out = {}

    def look():
        try:
            out["addrs"] = sorted({a[4][0] for a in socket.getaddrinfo(c["host"], 80)})
        except Exception as e:
            out["error"] = repr(e)

    t = threading.Thread(target=look, daemon=True)
    t.start()
    t.join(c["timeout"])
    return out or {"error": "timed out"}


def udp(c):
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.sendto(b"airlock-egress-test", (c["host"], c["port"]))
        return {"sent": True}
    except Exception as e:
        return {"error": repr(e)}


OPS = {"get": get, "front": front, "direct": direct, "dns": dns, "udp": udp}
for check in json.load(sys.stdin):
    result = OPS[check["op"]](check)
    result["check"] = check["name"]
    print(json.dumps(result), flush=True)
