"""A test server for the egress integration test: HTTP on 80, HTTPS on 443
(the test's certificate), and a UDP listener on 53. It logs every TCP
connection it accepts and every datagram it receives, with the peer's
address: a server that must not be reached proves it with an empty log."""
import http.server
import socket
import ssl
import sys
import threading
import urllib.parse

NAME = sys.argv[1]


def log(*parts):
    print(*parts, flush=True)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/redirect":
            to = urllib.parse.parse_qs(url.query)["to"][0]
            self.send_response(302)
            self.send_header("Location", to)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if url.path == "/page":
            body = f"<html><head><title>{NAME}</title></head><body><h1>Page of {NAME}</h1><script>x()</script></body></html>"
            ctype = "text/html; charset=utf-8"
        else:
            body = f"hello from {NAME} (host {self.headers.get('Host')})"
            ctype = "text/plain"
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        log("request", self.client_address[0], fmt % args)


class Server(http.server.ThreadingHTTPServer):
    tls = None

    def get_request(self):
        sock, addr = self.socket.accept()
        log("accept", "tls" if self.tls else "tcp", addr[0])
        if self.tls:
            sock.settimeout(10)
            sock = self.tls.wrap_socket(sock, server_side=True)
        return sock, addr


def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", 53))
    while True:
        _, addr = s.recvfrom(4096)
        log("udp", addr[0])


plain = Server(("0.0.0.0", 80), Handler)
secure = Server(("0.0.0.0", 443), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain("/t/cert.pem", "/t/key.pem")
secure.tls = ctx
for target in (plain.serve_forever, secure.serve_forever, udp):
    threading.Thread(target=target, daemon=True).start()
log("ready")
threading.Event().wait()
