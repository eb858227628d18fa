package egress

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
