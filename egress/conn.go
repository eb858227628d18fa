package egress

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// serveConn serves one client connection: requests until one fails, a
// CONNECT takes the connection over, the call ends or the proxy closes.
// A connection belongs to the call its source (address or door) ran when
// it was accepted.
func (p *Proxy) serveConn(c net.Conn, src source) {
	defer c.Close()
	stop := context.AfterFunc(p.ctx, func() { c.Close() })
	defer stop()
	cl := p.lookup(src)
	select {
	case p.slots <- struct{}{}:
		defer func() { <-p.slots }()
	default:
		p.busy(c, cl, src)
		return
	}
	p.metrics.open.Inc()
	defer p.metrics.open.Dec()
	if cl != nil && cl.ctx.Err() == nil { // a connection after the call's end is answered below
		stopCall := context.AfterFunc(cl.ctx, func() { c.Close() })
		defer stopCall()
	}
	lim := &headerLimit{r: c}
	br := bufio.NewReaderSize(lim, headerLookahead)
	for first := true; ; first = false {
		wait := p.cfg.HeaderTimeout
		if !first {
			wait = p.cfg.IdleTimeout
		}
		_ = c.SetReadDeadline(time.Now().Add(wait))
		lim.n = int64(p.cfg.MaxHeaderBytes + headerLookahead)
		lim.record(br)
		req, err := http.ReadRequest(br)
		if err != nil {
			p.badRequest(c, cl, src, err)
			return
		}
		if hosts := lim.hostHeader(); hosts != nil {
			req.Header["Host"] = hosts
		}
		lim.n = -1
		_ = c.SetReadDeadline(time.Time{})
		if cl != nil && cl.endReason() == ReasonTimeCap {
			p.timeUp(c, cl, req)
			return
		}
		if cl == nil || cl.ctx.Err() != nil {
			p.unregistered(c, src, req)
			return
		}
		if req.Method == http.MethodConnect {
			p.connect(cl, c, br, req)
			return
		}
		if !p.forward(cl, c, req) {
			return
		}
	}
}

// busyWait bounds how long a connection over MaxConns is read before its
// refusal.
const busyWait = time.Second

// headerLookahead is the read buffer of a client connection: what it may
// read past a request's header.
const headerLookahead = 4 << 10

// errHeaderTooLarge ends a request header over Config.MaxHeaderBytes.
var errHeaderTooLarge = errors.New("egress: request header too large")

// headerLimit bounds the bytes read from a client while a header is read
// (n < 0: no bound, while a body or tunnel is read), and keeps those bytes
// when recording: net/http's request parser drops the Host header of an
// absolute-form request, which the proxy must see to compare it with the
// URL.
type headerLimit struct {
	r   io.Reader
	n   int64
	rec []byte // the bytes of the header being read, when recording
	on  bool
}

// Read reads at most the bytes left.
func (l *headerLimit) Read(b []byte) (int, error) {
	if l.n < 0 {
		return l.r.Read(b)
	}
	if l.n == 0 {
		return 0, errHeaderTooLarge
	}
	if int64(len(b)) > l.n {
		b = b[:l.n]
	}
	n, err := l.r.Read(b)
	l.n -= int64(n)
	if l.on {
		l.rec = append(l.rec, b[:n]...)
	}
	return n, err
}

// record starts keeping the next request's header bytes, starting with
// what br already buffered (a pipelined request).
func (l *headerLimit) record(br *bufio.Reader) {
	buffered, _ := br.Peek(br.Buffered())
	l.rec, l.on = append(l.rec[:0], buffered...), true
}

// hostHeader stops recording and returns the Host header values of the
// recorded request.
func (l *headerLimit) hostHeader() []string {
	l.on = false
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(l.rec)))
	if _, err := tp.ReadLine(); err != nil {
		return nil
	}
	h, _ := tp.ReadMIMEHeader()
	l.rec = l.rec[:0]
	return h["Host"]
}

// badRequest answers a request that could not be read (nothing when the
// client just went away or stayed silent).
func (p *Proxy) badRequest(c net.Conn, cl *call, src source, err error) {
	var ne net.Error
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.As(err, &ne) && ne.Timeout() {
		return
	}
	p.start(cl, src, KindHTTP, "", "", 0).refuse(ReasonBadRequest)
	if errors.Is(err, errHeaderTooLarge) {
		writeRefusal(c, http.StatusRequestHeaderFieldsTooLarge, ReasonBadRequest, "request header too large")
		return
	}
	writeRefusal(c, http.StatusBadRequest, ReasonBadRequest, "malformed request: "+err.Error())
}

// busy refuses a connection over MaxConns. It reads (a little of) the
// request first, so that the client sees the answer as one.
func (p *Proxy) busy(c net.Conn, cl *call, src source) {
	_ = c.SetDeadline(time.Now().Add(busyWait))
	req, err := http.ReadRequest(bufio.NewReader(io.LimitReader(c, headerLookahead)))
	kind, method, host, port := KindHTTP, "", "", 0
	if err == nil {
		method = req.Method
		host, port, _ = requestTarget(req)
		if method == http.MethodConnect {
			kind = KindConnect
		}
	}
	p.start(cl, src, kind, method, host, port).refuse(ReasonBusy)
	writeRefusal(c, http.StatusServiceUnavailable, ReasonBusy, "the egress proxy is at its connection limit; retry later")
}

// unregistered refuses a request from a source that runs no call.
func (p *Proxy) unregistered(c net.Conn, src source, req *http.Request) {
	kind := KindHTTP
	if req.Method == http.MethodConnect {
		kind = KindConnect
	}
	host, port, _ := requestTarget(req)
	t := p.start(nil, src, kind, req.Method, host, port)
	t.refuse(ReasonUnregistered)
	writeRefusal(c, http.StatusForbidden, ReasonUnregistered, "no call runs from "+src.String())
}

// timeUp refuses, and records in the call's attempts, a request made after
// the call's network time (Caps.Time) is up.
func (p *Proxy) timeUp(c net.Conn, cl *call, req *http.Request) {
	kind := KindHTTP
	if req.Method == http.MethodConnect {
		kind = KindConnect
	}
	host, port, _ := requestTarget(req)
	p.start(cl, cl.src, kind, req.Method, host, port).refuse(ReasonTimeCap)
	writeRefusal(c, http.StatusForbidden, ReasonTimeCap, "this call's network time is up")
}

// requestTarget returns the host and port a proxy request names: the
// authority of a CONNECT, the URL's host of an absolute-form request
// (port 80 by default).
func requestTarget(req *http.Request) (string, int, error) {
	if req.Method == http.MethodConnect {
		host, port, err := net.SplitHostPort(req.RequestURI)
		if err != nil {
			return cleanHost(req.RequestURI), 0, fmt.Errorf("CONNECT target %q: want host:port", cleanHost(req.RequestURI))
		}
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return host, 0, fmt.Errorf("CONNECT target %q: bad port", cleanHost(req.RequestURI))
		}
		return host, n, nil
	}
	if !req.URL.IsAbs() || req.URL.Host == "" {
		return req.Host, 0, fmt.Errorf("want an absolute-form request (http://host/path): this is an egress proxy (set HTTP_PROXY)")
	}
	port := 80
	if ps := req.URL.Port(); ps != "" {
		n, err := strconv.Atoi(ps)
		if err != nil || n < 1 || n > 65535 {
			return req.URL.Hostname(), 0, fmt.Errorf("bad port %q", ps)
		}
		port = n
	}
	return req.URL.Hostname(), port, nil
}

// writeRefusal writes a proxy's own answer and asks the client to close.
// The reason is in the X-Airlock-Egress header and the text body.
func writeRefusal(w io.Writer, status int, reason, msg string) {
	body := fmt.Sprintf("airlock egress proxy: %s: %s\n", reason, msg)
	resp := &http.Response{
		StatusCode:    status,
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"text/plain; charset=utf-8"}, "X-Airlock-Egress": {reason}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Close:         true,
	}
	_ = resp.Write(w)
}

// remoteAddr returns a connection's source address (unmapped).
func remoteAddr(c net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}
