package egress

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"time"
)

// connect serves a CONNECT request: the policy on the target, the Guard on
// every address it resolves to, the call's caps, then "200", the TLS
// ClientHello's server name, and only then the upstream connection, which
// gets the hello and the relay.
func (p *Proxy) connect(cl *call, c net.Conn, br *bufio.Reader, req *http.Request) {
	host, port, err := requestTarget(req)
	t := p.start(cl, cl.src, KindConnect, req.Method, host, port)
	if err != nil {
		t.refuse(ReasonBadRequest)
		writeRefusal(c, http.StatusBadRequest, ReasonBadRequest, err.Error())
		return
	}
	dest, ok := normalizeDest(host)
	pol := cl.info.Policy
	refuse := func(status int, reason, msg string) {
		t.refuse(reason)
		writeRefusal(c, status, reason, msg)
	}
	switch {
	case !ok:
		refuse(http.StatusBadRequest, ReasonBadRequest, "bad host "+t.ev.Host)
		return
	case !pol.Tunnels():
		refuse(http.StatusForbidden, ReasonTunnel, "this call's egress_methods do not include CONNECT, so tunnels (whose methods cannot be checked) are refused; use http:// URLs")
		return
	case !pol.Allows(dest, port):
		refuse(http.StatusForbidden, ReasonNotAllowed, target(dest, port)+" is not in this call's egress policy")
		return
	case p.packages(cl).tunnel(dest, port) != "":
		refuse(http.StatusForbidden, ReasonPackageTLS, "package names are checked on this index, which a TLS tunnel would hide: reach it over http:// (PIP_INDEX_URL)")
		return
	}
	addrs, reason := p.net.resolve(cl.ctx, dest)
	if reason != "" {
		refuse(http.StatusForbidden, reason, target(dest, port)+": "+addressMessage(reason))
		return
	}
	if reason := cl.begin(); reason != "" {
		refuse(http.StatusForbidden, reason, "this call's network cap is reached")
		return
	}
	defer cl.end()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		t.refuse(ReasonBadRequest)
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(p.cfg.HeaderTimeout))
	h, first, err := peekHello(br, c)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		reason := ReasonNotTLS
		if r := p.endReason(cl); r != "" {
			reason = r
		}
		t.refuse(reason)
		return
	}
	t.ev.SNI = cleanHost(h.serverName)
	if reason := checkHello(dest, h); reason != "" {
		t.refuse(reason)
		return
	}
	up, addr, err := p.net.dial(cl.ctx, addrs, port)
	if err != nil {
		t.ev.Allowed = true
		t.finish(p.dialReason(cl), 0)
		return
	}
	defer up.Close()
	t.allow(addr)
	n, err := up.Write(first)
	if err != nil {
		t.finish("", int64(n))
		return
	}
	cl.bytes.Add(int64(n))
	moved, reason := p.relay(cl, c, br, up)
	t.finish(reason, int64(n)+moved)
}

// dialReason is the reason of a failed dial: the call's end, its time cap
// or the proxy's end when that is what stopped it, else ReasonDial.
func (p *Proxy) dialReason(cl *call) string {
	if r := p.endReason(cl); r != "" {
		return r
	}
	return ReasonDial
}

// endReason returns why a call's connections are being cut: the call's
// end or time cap, or the proxy's Close; "" while both run.
func (p *Proxy) endReason(cl *call) string {
	if r := cl.endReason(); r != "" {
		return r
	}
	if p.ctx.Err() != nil {
		return ReasonClosed
	}
	return ""
}

// target formats host:port for messages.
func target(host string, port int) string {
	return net.JoinHostPort(host, itoa(port))
}

// addressMessage explains an address refusal to the client.
func addressMessage(reason string) string {
	switch reason {
	case ReasonResolve:
		return "the name does not resolve"
	case ReasonPrivate:
		return "it resolves to a private address the operator does not allow"
	case ReasonLocal:
		return "it resolves to an address of the proxy's own host"
	}
	return "it resolves to a " + reason + " address, never reachable"
}
