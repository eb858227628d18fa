package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/html/charset"

	"github.com/airlock-dev/airlock/core"
)

// urlTarget returns a URL's host (normalized) and port.
func urlTarget(u *url.URL) (string, int, bool) {
	dest, ok := normalizeDest(u.Hostname())
	port := 80
	if u.Scheme == "https" {
		port = 443
	}
	if ps := u.Port(); ps != "" {
		n, err := strconv.Atoi(ps)
		if err != nil || n < 1 || n > 65535 {
			return "", 0, false
		}
		port = n
	}
	return dest, port, ok
}

// hop fetches one URL into res. It returns the Location of a redirect,
// which the caller follows, or "" when res holds the answer.
func (f *Fetcher) hop(ctx context.Context, owner, callID string, pol Policy, log *fetchLog, res *FetchResult, u *url.URL, maxBytes int64) (string, error) {
	dest, port, ok := urlTarget(u)
	t := f.start(log, owner, callID, u.Hostname(), port)
	res.URL = u.String()
	switch {
	case !ok:
		t.refuse(ReasonBadRequest)
		return "", refusal(ReasonBadRequest, "bad host or port in "+cleanHost(u.String()))
	case !pol.AllowsMethod(http.MethodGet):
		t.refuse(ReasonMethod)
		return "", refusal(ReasonMethod, "GET is not in this call's egress_methods")
	case !pol.Allows(dest, port):
		t.refuse(ReasonNotAllowed)
		return "", refusal(ReasonNotAllowed, target(dest, port)+" is not in this call's egress policy")
	}
	addrs, reason := f.net.resolve(ctx, dest)
	if reason != "" {
		t.refuse(reason)
		return "", refusal(reason, target(dest, port)+": "+addressMessage(reason))
	}
	var conn atomic.Pointer[countingConn] // set by the transport's dial
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, addr, err := f.net.dial(ctx, addrs, port)
			if err != nil {
				return nil, err
			}
			cc := &countingConn{Conn: c, addr: addr}
			conn.Store(cc)
			return cc, nil
		},
		TLSClientConfig:        &tls.Config{RootCAs: f.cfg.RootCAs, MinVersion: tls.VersionTLS12},
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      false,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		t.refuse(ReasonBadRequest)
		return "", refusal(ReasonBadRequest, err.Error())
	}
	hreq.Header.Set("User-Agent", f.cfg.UserAgent)
	hreq.Header.Set("Accept", "text/html, text/plain;q=0.9, application/json;q=0.8, */*;q=0.1")
	resp, err := client.Do(hreq)
	if cc := conn.Load(); cc != nil {
		t.allow(cc.addr)
	}
	moved := func() int64 {
		if cc := conn.Load(); cc != nil {
			return cc.n.Load()
		}
		return 0
	}
	if err != nil {
		t.ev.Allowed = true // the policy and the guard let it through; the server did not answer
		if ctx.Err() != nil {
			t.finish(ReasonTimeout, moved())
			return "", &fetchFailure{status: core.StatusTimeout, reason: ReasonTimeout, msg: "the fetch took longer than " + f.cfg.Timeout.String()}
		}
		t.finish(ReasonDial, moved())
		return "", &fetchFailure{status: core.StatusError, reason: ReasonDial, msg: cleanHost(err.Error())}
	}
	defer resp.Body.Close()
	res.HTTPStatus = resp.StatusCode
	if loc := resp.Header.Get("Location"); isRedirect(resp.StatusCode) && loc != "" {
		res.Redirects = append(res.Redirects, u.String())
		t.finish("", moved())
		return loc, nil
	}
	err = f.readBody(ctx, res, resp, maxBytes)
	reason = ""
	var ff *fetchFailure
	if errors.As(err, &ff) {
		reason = ff.reason
	}
	t.finish(reason, moved())
	return "", err
}

// redirect returns the URL a redirect from `from` to loc leads to, or why
// it is not followed (its hop is checked like the first).
func (f *Fetcher) redirect(from *url.URL, loc string, hop int) (*url.URL, error) {
	if hop >= f.cfg.MaxRedirects {
		return nil, refusal(ReasonRedirects, fmt.Sprintf("more than %d redirects", f.cfg.MaxRedirects))
	}
	next, err := from.Parse(loc)
	if err != nil {
		return nil, refusal(ReasonBadRequest, "bad redirect location "+strconv.Quote(cleanHost(loc)))
	}
	if next.Scheme != "http" && next.Scheme != "https" || next.User != nil {
		return nil, refusal(ReasonScheme, "redirect to "+cleanHost(next.String())+" is not an http(s) URL without user info")
	}
	next.Fragment, next.RawFragment = "", ""
	return next, nil
}

// isRedirect reports the redirect statuses fetch follows.
func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// readBody reads up to maxBytes of resp's body into res as text, after
// checking its media type (sniffed when the server names none).
func (f *Fetcher) readBody(ctx context.Context, res *FetchResult, resp *http.Response, maxBytes int64) error {
	br := bufio.NewReaderSize(resp.Body, 512)
	ctype := resp.Header.Get("Content-Type")
	if ctype == "" {
		head, _ := br.Peek(512)
		ctype = http.DetectContentType(head)
	}
	mt, _, err := mime.ParseMediaType(ctype)
	if err != nil || !f.acceptable(mt) {
		return refusal(ReasonContentType, fmt.Sprintf("content type %q is not text (accepted: %s)", cleanHost(ctype), strings.Join(f.cfg.ContentTypes, ", ")))
	}
	res.ContentType = mt
	body, err := io.ReadAll(io.LimitReader(br, maxBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return &fetchFailure{status: core.StatusTimeout, reason: ReasonTimeout, msg: "the fetch took longer than " + f.cfg.Timeout.String()}
		}
		return &fetchFailure{status: core.StatusError, reason: ReasonDial, msg: "reading the body: " + cleanHost(err.Error())}
	}
	if int64(len(body)) > maxBytes {
		body, res.Truncated = body[:maxBytes], true
	}
	res.Bytes = int64(len(body))
	text, err := charset.NewReader(bytes.NewReader(body), ctype)
	if err != nil {
		text = bytes.NewReader(body)
	}
	if mt == "text/html" || mt == "application/xhtml+xml" {
		title, s, err := htmlText(text)
		if err != nil {
			return &fetchFailure{status: core.StatusError, reason: ReasonContentType, msg: "unreadable HTML: " + err.Error()}
		}
		res.Title, res.Text = title, s
	} else {
		b, _ := io.ReadAll(text)
		res.Text = strings.ToValidUTF8(string(b), "\uFFFD")
	}
	res.Status = core.StatusOK
	return nil
}

// acceptable reports whether media type mt matches ContentTypes.
func (f *Fetcher) acceptable(mt string) bool {
	for _, p := range f.cfg.ContentTypes {
		if ok, _ := path.Match(p, mt); ok {
			return true
		}
	}
	return false
}

// start opens the attempt of one hop.
func (f *Fetcher) start(log *fetchLog, owner, callID, host string, port int) *try {
	t := &try{log: log, done: f.ended, ev: Event{
		Time: time.Now(), Owner: owner, CallID: callID, Kind: KindFetch, Method: http.MethodGet,
		Attempt: Attempt{Host: cleanHost(host), Port: port},
	}}
	t.slot = log.slot()
	log.set(t.slot, t.ev.Attempt)
	return t
}

// ended reports a finished hop to the metrics and the audit hook.
func (f *Fetcher) ended(ev Event) {
	f.metrics.attempts.WithLabelValues(result(ev.Allowed), ev.Reason).Inc()
	f.metrics.bytes.Add(float64(ev.Bytes))
	if f.cfg.Audit != nil {
		f.cfg.Audit(ev)
	}
}

// fetchLog keeps one fetch's hops.
type fetchLog struct {
	mu       sync.Mutex
	attempts []Attempt
}

func (l *fetchLog) slot() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempts = append(l.attempts, Attempt{})
	return len(l.attempts) - 1
}

func (l *fetchLog) set(slot int, a Attempt) {
	l.mu.Lock()
	l.attempts[slot] = a
	l.mu.Unlock()
}

// countingConn counts a connection's bytes both ways.
type countingConn struct {
	net.Conn
	addr netip.Addr
	n    atomic.Int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}
