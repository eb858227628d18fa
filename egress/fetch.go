package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
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

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/html/charset"

	"github.com/airlock-dev/airlock/core"
)

// FetchConfig configures a Fetcher. Guard is required; every other zero
// field takes DefaultFetchConfig's value.
type FetchConfig struct {
	// Guard checks every address a fetch would connect to.
	Guard *Guard
	// Resolver resolves names (nil: the system resolver).
	Resolver Resolver
	// Dialer opens connections (nil: a net.Dialer).
	Dialer Dialer
	// RootCAs verifies HTTPS servers (nil: the system roots).
	RootCAs *x509.CertPool
	// MaxBytes is the most of a body a fetch reads, and the default of a
	// request's max_bytes (which may only lower it).
	MaxBytes int64
	// Timeout bounds a whole fetch, redirects included.
	Timeout time.Duration
	// DialTimeout bounds one name resolution and one connection set-up.
	DialTimeout time.Duration
	// MaxRedirects is how many redirects a fetch follows.
	MaxRedirects int
	// ContentTypes are the media types a fetch accepts, as path.Match
	// patterns ("text/*", "application/*+json"); others are refused.
	ContentTypes []string
	// UserAgent is sent with every request.
	UserAgent string
	// Audit, if set, is called once for every hop, when it ends.
	Audit func(Event)
	// Registerer receives the fetcher's metrics (nil: not exported).
	Registerer prometheus.Registerer
}

// DefaultFetchConfig returns the defaults, without a Guard.
func DefaultFetchConfig() FetchConfig {
	return FetchConfig{
		MaxBytes:     1 << 20,
		Timeout:      30 * time.Second,
		DialTimeout:  10 * time.Second,
		MaxRedirects: 5,
		ContentTypes: []string{"text/*", "application/json", "application/*+json", "application/xml",
			"application/*+xml", "application/javascript", "application/x-ndjson"},
		UserAgent: "airlock-fetch/1",
	}
}

// FetchRequest is the fetch_url tool's arguments.
type FetchRequest struct {
	URL      string `json:"url"`
	MaxBytes int64  `json:"max_bytes,omitempty"` // 0: the server's; more is lowered to it
}

// FetchResult is what a fetch did. Status is core.StatusOK when an answer
// came back (any HTTP status; HTTPStatus says which), StatusRejected when
// the policy, the address checks or the content type refused it (Reason
// says which), StatusTimeout when the time cap passed, StatusError when
// the server could not be reached or the answer could not be read.
type FetchResult struct {
	Status      core.Status `json:"status"`
	Reason      string      `json:"reason,omitempty"`
	Message     string      `json:"message,omitempty"`
	URL         string      `json:"url"` // the last URL fetched (after redirects)
	Redirects   []string    `json:"redirects,omitempty"`
	HTTPStatus  int         `json:"http_status,omitempty"`
	ContentType string      `json:"content_type,omitempty"`
	Title       string      `json:"title,omitempty"`
	// Text is the body as text; HTML reduced to its readable text.
	Text string `json:"text"`
	// Bytes is how much of the body was read; Truncated says the body was
	// longer than max_bytes (Text is from its first max_bytes).
	Bytes     int64     `json:"bytes"`
	Truncated bool      `json:"truncated,omitempty"`
	Network   []Attempt `json:"network"`
}

// Fetcher runs fetch_url on the Airlock host itself (not in a sandbox):
// every hop through the caller's policy and the Guard, like the proxy.
type Fetcher struct {
	cfg     FetchConfig
	net     netPath
	metrics *fetchMetrics
}

// NewFetcher returns a Fetcher.
func NewFetcher(cfg FetchConfig) (*Fetcher, error) {
	if cfg.Guard == nil {
		return nil, core.Errorf("egress.NewFetcher", core.ErrInvalid, "config has no Guard")
	}
	d := DefaultFetchConfig()
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Dialer == nil {
		cfg.Dialer = &net.Dialer{}
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = d.MaxBytes
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = d.Timeout
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = d.DialTimeout
	}
	if cfg.MaxRedirects <= 0 {
		cfg.MaxRedirects = d.MaxRedirects
	}
	if cfg.ContentTypes == nil {
		cfg.ContentTypes = d.ContentTypes
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = d.UserAgent
	}
	m, err := newFetchMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("egress: fetch metrics: %w", err)
	}
	return &Fetcher{
		cfg:     cfg,
		net:     netPath{guard: cfg.Guard, resolver: cfg.Resolver, dialer: cfg.Dialer, dialTimeout: cfg.DialTimeout},
		metrics: m,
	}, nil
}

// Fetch gets req.URL for owner's call callID within policy pol: GET only,
// each redirect re-checked as a new hop (policy, resolution, Guard), the
// body read up to max_bytes, refused unless its media type is one of
// ContentTypes, decoded to UTF-8 and, for HTML, reduced to readable text.
// A malformed request (URL, max_bytes) is an error with core.ErrInvalid;
// so is the end of ctx (its code); everything the destination did is in
// the result.
func (f *Fetcher) Fetch(ctx context.Context, owner, callID string, pol Policy, req FetchRequest) (*FetchResult, error) {
	u, err := checkFetchURL(req.URL)
	if err != nil {
		return nil, err
	}
	if req.MaxBytes < 0 {
		return nil, core.Errorf("egress.fetch", core.ErrInvalid, "max_bytes must not be negative")
	}
	maxBytes := f.cfg.MaxBytes
	if req.MaxBytes > 0 {
		maxBytes = min(req.MaxBytes, maxBytes)
	}
	log := &fetchLog{}
	res := &FetchResult{URL: u.String()}
	fctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	for hop := 0; ; hop++ {
		loc, err := f.hop(fctx, owner, callID, pol, log, res, u, maxBytes)
		if ctx.Err() != nil {
			return nil, core.E("egress.fetch", core.CodeOf(ctx.Err()), ctx.Err())
		}
		if err == nil && loc == "" {
			break
		}
		if err == nil {
			u, err = f.redirect(u, loc, hop)
		}
		if err != nil {
			f.fail(res, err)
			break
		}
	}
	res.Network = log.attempts
	return res, nil
}

// fetchFailure is a fetch outcome other than ok.
type fetchFailure struct {
	status core.Status
	reason string
	msg    string
}

func (e *fetchFailure) Error() string { return e.reason + ": " + e.msg }

// refusal builds a rejected outcome.
func refusal(reason, msg string) error {
	return &fetchFailure{status: core.StatusRejected, reason: reason, msg: msg}
}

// fail sets res's outcome from err.
func (f *Fetcher) fail(res *FetchResult, err error) {
	var ff *fetchFailure
	if !errors.As(err, &ff) {
		ff = &fetchFailure{status: core.StatusError, reason: ReasonDial, msg: err.Error()}
	}
	res.Status, res.Reason, res.Message = ff.status, ff.reason, ff.msg
	res.Text = ""
}

// checkFetchURL parses a fetch_url URL: absolute http or https, a host, no
// user info.
func checkFetchURL(raw string) (*url.URL, error) {
	bad := func(why string) error {
		return core.Errorf("egress.fetch", core.ErrInvalid, fmt.Sprintf("url %q: %s", cleanHost(raw), why))
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, bad("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, bad("want an http:// or https:// URL")
	case u.Hostname() == "":
		return nil, bad("no host")
	case u.User != nil:
		return nil, bad("user info in URLs is not supported")
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

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

// Render returns the result as the text a tool message carries: a short
// header (URL, HTTP status, type, title, truncation) and the text, or the
// reason the fetch failed. The dispatcher truncates it like any output.
func (r *FetchResult) Render() string {
	var b strings.Builder
	if r.Status != core.StatusOK {
		fmt.Fprintf(&b, "fetch %s: %s (%s): %s\n", r.URL, r.Status, r.Reason, r.Message)
		return b.String()
	}
	fmt.Fprintf(&b, "URL: %s\nHTTP status: %d\nContent-Type: %s\n", r.URL, r.HTTPStatus, r.ContentType)
	if r.Title != "" {
		fmt.Fprintf(&b, "Title: %s\n", r.Title)
	}
	if r.Truncated {
		fmt.Fprintf(&b, "Truncated: only the first %d bytes of the body were read\n", r.Bytes)
	}
	b.WriteString("\n")
	b.WriteString(r.Text)
	return b.String()
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

// fetchMetrics are the fetcher's Prometheus series.
type fetchMetrics struct {
	attempts *prometheus.CounterVec
	bytes    prometheus.Counter
}

// newFetchMetrics builds the series and registers them with reg (nil:
// kept but not exported).
func newFetchMetrics(reg prometheus.Registerer) (*fetchMetrics, error) {
	m := &fetchMetrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_fetch_attempts_total",
			Help: "fetch_url hops by result (allowed, refused) and reason.",
		}, []string{"result", "reason"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "airlock_fetch_bytes_total",
			Help: "Bytes fetch_url moved on the wire, both ways.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.attempts, m.bytes} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register: %w", err)
			}
		}
	}
	return m, nil
}
