package egress

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// hopHeaders are the hop-by-hop headers a proxy does not forward (RFC 9110
// 7.6.1), besides those a Connection header names. Dropping Upgrade means
// a plain request cannot turn into a tunnel whose methods go unchecked.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// forward serves one plain (absolute-form) HTTP request: the scheme, the
// Host header, the method and the policy on the URL's host and port, the
// Guard on every address, the caps; then one new upstream connection
// (never shared between requests or calls) that gets the request in origin
// form with Host set to the name that was checked. It returns whether the
// client connection may serve another request.
func (p *Proxy) forward(cl *call, c net.Conn, req *http.Request) bool {
	host, port, err := requestTarget(req)
	t := p.start(cl, cl.src, KindHTTP, req.Method, host, port)
	refuse := func(status int, reason, msg string) bool {
		t.refuse(reason)
		writeRefusal(c, status, reason, msg)
		return false
	}
	if err != nil {
		return refuse(http.StatusBadRequest, ReasonBadRequest, err.Error())
	}
	if req.URL.Scheme != "http" {
		return refuse(http.StatusForbidden, ReasonScheme, "only http:// requests go through as plain requests; https goes through CONNECT (HTTPS_PROXY)")
	}
	dest, ok := normalizeDest(host)
	if !ok {
		return refuse(http.StatusBadRequest, ReasonBadRequest, "bad host "+t.ev.Host)
	}
	pol := cl.info.Policy
	if hh := req.Header.Get("Host"); hh != "" && !sameAuthority(hh, dest, port) {
		return refuse(http.StatusForbidden, ReasonHostMismatch, "the Host header "+strconv.Quote(cleanHost(hh))+" names another host than the URL")
	}
	if !pol.AllowsMethod(req.Method) {
		return refuse(http.StatusForbidden, ReasonMethod, "method "+cleanHost(req.Method)+" is not in this call's egress_methods")
	}
	if !pol.Allows(dest, port) {
		return refuse(http.StatusForbidden, ReasonNotAllowed, target(dest, port)+" is not in this call's egress policy")
	}
	if reason, msg := p.packages(cl).request(dest, port, req.URL.Path); reason != "" {
		return refuse(http.StatusForbidden, reason, msg)
	}
	addrs, reason := p.net.resolve(cl.ctx, dest)
	if reason != "" {
		return refuse(http.StatusForbidden, reason, target(dest, port)+": "+addressMessage(reason))
	}
	if reason := cl.begin(); reason != "" {
		return refuse(http.StatusForbidden, reason, "this call's network cap is reached")
	}
	defer cl.end()
	up, addr, err := p.net.dial(cl.ctx, addrs, port)
	if err != nil {
		t.ev.Allowed = true
		t.finish(p.dialReason(cl), 0)
		writeRefusal(c, http.StatusBadGateway, ReasonDial, target(dest, port)+" does not answer")
		return false
	}
	t.allow(addr)
	mc := &meteredConn{Conn: up, cl: cl, idle: p.cfg.IdleTimeout}
	stop := context.AfterFunc(cl.ctx, func() { _ = up.Close() })
	defer stop()
	keep, err := p.exchange(c, mc, req, dest, port)
	_ = up.Close()
	reason = p.endReason(cl)
	switch {
	case reason != "":
	case mc.capped.Load():
		reason = ReasonByteCap
	case err != nil && isTimeout(err):
		reason = ReasonIdle
	}
	t.finish(reason, mc.n.Load())
	return keep && err == nil
}

// exchange sends req upstream through up and the answer back to the
// client c; it returns whether the client connection can be kept.
func (p *Proxy) exchange(c net.Conn, up *meteredConn, req *http.Request, dest string, port int) (bool, error) {
	clientClose := req.Close
	removeHop(req.Header)
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		req.Header.Del("Expect")
		if _, err := io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return false, err
		}
	}
	req.Host = dest
	if port != 80 {
		req.Host = target(dest, port)
	} else if strings.Contains(dest, ":") {
		req.Host = "[" + dest + "]"
	}
	req.RequestURI = ""
	req.Close = true
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = &deadlineReader{ReadCloser: req.Body, c: c, idle: p.cfg.IdleTimeout}
	}
	sent := make(chan error, 1)
	go func() { sent <- req.Write(up) }()
	lim := &headerLimit{r: up, n: int64(p.cfg.MaxHeaderBytes + headerLookahead)}
	br := bufio.NewReaderSize(lim, headerLookahead)
	var resp *http.Response
	var err error
	for {
		resp, err = http.ReadResponse(br, req)
		if err != nil || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		resp.Body.Close() // an informational answer (100, 103): not forwarded
	}
	if err != nil {
		_ = up.Close()
		<-sent
		writeRefusal(c, http.StatusBadGateway, ReasonDial, "no answer from upstream: "+err.Error())
		return false, err
	}
	defer resp.Body.Close()
	lim.n = -1
	if resp.StatusCode == http.StatusSwitchingProtocols {
		_ = up.Close()
		<-sent
		return false, errors.New("egress: upstream switched protocols")
	}
	removeHop(resp.Header)
	bodyless := req.Method == http.MethodHead || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified
	keep := !clientClose && (bodyless || resp.ContentLength >= 0 || len(resp.TransferEncoding) > 0)
	resp.Close = !keep
	bw := bufio.NewWriterSize(&deadlineWriter{c: c, idle: p.cfg.IdleTimeout}, bufSize)
	err = resp.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	_ = up.Close()
	if werr := <-sent; werr != nil && err == nil && !errors.Is(werr, net.ErrClosed) {
		err = werr
	}
	return keep, err
}

// removeHop deletes hop-by-hop headers, including those Connection names.
func removeHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// sameAuthority reports whether a Host header names dest:port.
func sameAuthority(hostHeader, dest string, port int) bool {
	h, ps, err := net.SplitHostPort(hostHeader)
	if err != nil {
		h, ps = hostHeader, "80"
	}
	n, _ := strconv.Atoi(ps)
	d, ok := normalizeDest(h)
	return ok && d == dest && n == port
}

// errByteCap ends a plain request's upstream traffic at the call's cap.
var errByteCap = errors.New("egress: the call's byte cap is reached")

// meteredConn counts an upstream connection's bytes against its call's
// cap and closes it when nothing moves for the idle timeout.
type meteredConn struct {
	net.Conn
	cl     *call
	idle   time.Duration
	n      atomic.Int64
	capped atomic.Bool
}

// Read reads at most what the call may still move.
func (m *meteredConn) Read(b []byte) (int, error) {
	rem := m.cl.remaining()
	if rem <= 0 {
		m.capped.Store(true)
		return 0, errByteCap
	}
	if int64(len(b)) > rem {
		b = b[:rem]
	}
	_ = m.Conn.SetReadDeadline(time.Now().Add(m.idle))
	n, err := m.Conn.Read(b)
	m.count(n)
	return n, err
}

// Write writes at most what the call may still move.
func (m *meteredConn) Write(b []byte) (int, error) {
	rem := m.cl.remaining()
	var capErr error
	if int64(len(b)) > rem {
		b, capErr = b[:max(rem, 0)], errByteCap
		m.capped.Store(true)
	}
	_ = m.Conn.SetWriteDeadline(time.Now().Add(m.idle))
	n, err := m.Conn.Write(b)
	m.count(n)
	if err == nil {
		err = capErr
	}
	return n, err
}

func (m *meteredConn) count(n int) {
	m.n.Add(int64(n))
	m.cl.bytes.Add(int64(n))
}

// deadlineWriter writes to a client connection, giving each write the
// idle timeout.
type deadlineWriter struct {
	c    net.Conn
	idle time.Duration
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	_ = w.c.SetWriteDeadline(time.Now().Add(w.idle))
	return w.c.Write(b)
}

// deadlineReader reads a request body from a client connection, giving
// each read the idle timeout.
type deadlineReader struct {
	io.ReadCloser
	c    net.Conn
	idle time.Duration
}

func (r *deadlineReader) Read(b []byte) (int, error) {
	_ = r.c.SetReadDeadline(time.Now().Add(r.idle))
	return r.ReadCloser.Read(b)
}

// isTimeout reports a deadline error.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
