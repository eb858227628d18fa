package egress

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// fetchRig is a fetcher on loopback with a site and a refused server.
type fetchRig struct {
	f       *Fetcher
	site    *testServer
	tlsSite *testServer
	refused *testServer
	evs     *events
	reg     *prometheus.Registry
}

func newFetchRig(t *testing.T, mod func(*FetchConfig)) *fetchRig {
	cert, pool := testCert(t, "allowed.test", "refused.test")
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>Test page</title><script>x()</script></head><body><h1>Hello</h1><p>Readable   text.</p></body></html>`)
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
		w.Write([]byte("caf\xe9"))
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"a": 1}`)
	})
	mux.HandleFunc("/untyped", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil
		fmt.Fprint(w, "<!DOCTYPE html><p>sniffed</p>")
	})
	mux.HandleFunc("/png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n...."))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("0123456789", 10000))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such page", http.StatusNotFound)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	evs := &events{}
	reg := prometheus.NewRegistry()
	fr := &fetchRig{
		site:    newTestServer(t, mux, nil),
		tlsSite: newTestServer(t, mux, &cert),
		refused: newTestServer(t, greet("refused"), nil),
		evs:     evs,
		reg:     reg,
	}
	cfg := FetchConfig{Guard: loopbackGuard(t), Resolver: testResolver(), Dialer: loopbackFence(t), RootCAs: pool, Audit: evs.add, Registerer: reg}
	if mod != nil {
		mod(&cfg)
	}
	f, err := NewFetcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fr.f = f
	return fr
}

// policy allows allowed.test on both sites' ports.
func (fr *fetchRig) policy(t *testing.T, extra ...string) Policy {
	p, err := ParseHosts(strings.Join(append([]string{hostPort("allowed.test", fr.site.port()), hostPort("allowed.test", fr.tlsSite.port())}, extra...), ","))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (fr *fetchRig) url(path string) string {
	return fmt.Sprintf("http://allowed.test:%d%s", fr.site.port(), path)
}

func (fr *fetchRig) fetch(t *testing.T, pol Policy, req FetchRequest) *FetchResult {
	t.Helper()
	res, err := fr.f.Fetch(t.Context(), "alice", "call-9", pol, req)
	if err != nil {
		t.Fatalf("fetch %s: %v", req.URL, err)
	}
	return res
}

func TestFetchPage(t *testing.T) {
	fr := newFetchRig(t, nil)
	pol := fr.policy(t)
	for _, url := range []string{fr.url("/page"), fmt.Sprintf("https://allowed.test:%d/page", fr.tlsSite.port())} {
		res := fr.fetch(t, pol, FetchRequest{URL: url})
		if res.Status != core.StatusOK || res.HTTPStatus != 200 || res.Title != "Test page" || res.Text != "# Hello\n\nReadable text." ||
			res.ContentType != "text/html" || res.Truncated || len(res.Network) != 1 || !res.Network[0].Allowed || res.Network[0].Bytes == 0 {
			t.Errorf("%s: %+v", url, res)
		}
		if r := res.Render(); !strings.Contains(r, "Title: Test page") || !strings.HasSuffix(r, "Readable text.") {
			t.Errorf("render: %q", r)
		}
	}
	evs := fr.evs.all()
	if len(evs) != 2 || evs[0].Kind != KindFetch || evs[0].Owner != "alice" || evs[0].CallID != "call-9" {
		t.Errorf("events %+v", evs)
	}
	if n := testutil.ToFloat64(fr.f.metrics.attempts.WithLabelValues("allowed", "")); n != 2 {
		t.Errorf("metric %v", n)
	}
}

func TestFetchBodies(t *testing.T) {
	fr := newFetchRig(t, nil)
	pol := fr.policy(t)
	for _, tc := range []struct {
		path, text, ctype string
		status            int
	}{
		{"/latin1", "café", "text/plain", 200},
		{"/json", `{"a": 1}`, "application/json", 200},
		{"/untyped", "sniffed", "text/html", 200},
		{"/missing", "no such page", "text/plain", 404},
	} {
		res := fr.fetch(t, pol, FetchRequest{URL: fr.url(tc.path)})
		if res.Status != core.StatusOK || strings.TrimSpace(res.Text) != tc.text || res.ContentType != tc.ctype || res.HTTPStatus != tc.status {
			t.Errorf("%s: %+v", tc.path, res)
		}
	}
	res := fr.fetch(t, pol, FetchRequest{URL: fr.url("/png")})
	if res.Status != core.StatusRejected || res.Reason != ReasonContentType || res.Text != "" {
		t.Errorf("png: %+v", res)
	}
	res = fr.fetch(t, pol, FetchRequest{URL: fr.url("/big"), MaxBytes: 1000})
	if res.Status != core.StatusOK || !res.Truncated || len(res.Text) != 1000 || res.Bytes != 1000 {
		t.Errorf("big with max_bytes 1000: truncated=%v len=%d bytes=%d", res.Truncated, len(res.Text), res.Bytes)
	}
	// max_bytes above the server's is lowered to it.
	small := newFetchRig(t, func(c *FetchConfig) { c.MaxBytes = 500 })
	res = small.fetch(t, small.policy(t), FetchRequest{URL: small.url("/big"), MaxBytes: 1 << 30})
	if !res.Truncated || res.Bytes != 500 {
		t.Errorf("max_bytes over the ceiling: %d bytes", res.Bytes)
	}
}

func TestFetchRefusals(t *testing.T) {
	fr := newFetchRig(t, nil)
	pol := fr.policy(t, hostPort("sneaky.test", fr.site.port()), hostPort("meta.test", fr.site.port()))
	for _, tc := range []struct {
		url, reason string
	}{
		{fmt.Sprintf("http://refused.test:%d/", fr.refused.port()), ReasonNotAllowed},
		{fmt.Sprintf("http://allowed.test:%d/", fr.refused.port()), ReasonNotAllowed},
		{fmt.Sprintf("http://sneaky.test:%d/", fr.site.port()), ReasonPrivate},
		{fmt.Sprintf("http://meta.test:%d/", fr.site.port()), ReasonMetadata},
	} {
		res := fr.fetch(t, pol, FetchRequest{URL: tc.url})
		if res.Status != core.StatusRejected || res.Reason != tc.reason || len(res.Network) != 1 || res.Network[0].Allowed {
			t.Errorf("%s: %+v", tc.url, res)
		}
	}
	res := fr.fetch(t, pol.WithMethods([]string{"HEAD"}), FetchRequest{URL: fr.url("/page")})
	if res.Status != core.StatusRejected || res.Reason != ReasonMethod {
		t.Errorf("GET not allowed: %+v", res)
	}
	if fr.refused.conns() != 0 || fr.site.conns() != 0 {
		t.Errorf("refused fetches reached servers: %d, %d", fr.refused.conns(), fr.site.conns())
	}
}

func TestFetchRedirects(t *testing.T) {
	fr := newFetchRig(t, nil)
	pol := fr.policy(t)
	// An allowed redirect: followed, each hop recorded.
	res := fr.fetch(t, pol, FetchRequest{URL: fr.url("/redirect?to=/page")})
	if res.Status != core.StatusOK || res.Title != "Test page" || len(res.Network) != 2 || len(res.Redirects) != 1 || res.URL != fr.url("/page") {
		t.Errorf("allowed redirect: %+v", res)
	}
	// A redirect to a refused host: refused, and that host never sees a connection.
	to := fmt.Sprintf("http://refused.test:%d/", fr.refused.port())
	res = fr.fetch(t, pol, FetchRequest{URL: fr.url("/redirect?to=" + to)})
	if res.Status != core.StatusRejected || res.Reason != ReasonNotAllowed || len(res.Network) != 2 ||
		!res.Network[0].Allowed || res.Network[1].Allowed || res.Network[1].Host != "refused.test" {
		t.Errorf("redirect to a refused host: %+v", res)
	}
	// A redirect from https to a plain port not listed.
	res = fr.fetch(t, pol, FetchRequest{URL: fmt.Sprintf("https://allowed.test:%d/redirect?to=http://allowed.test/", fr.tlsSite.port())})
	if res.Status != core.StatusRejected || res.Reason != ReasonNotAllowed {
		t.Errorf("redirect to port 80: %+v", res)
	}
	res = fr.fetch(t, pol, FetchRequest{URL: fr.url("/redirect?to=file:///etc/passwd")})
	if res.Status != core.StatusRejected || res.Reason != ReasonScheme {
		t.Errorf("redirect to file: %+v", res)
	}
	res = fr.fetch(t, pol, FetchRequest{URL: fr.url("/loop")})
	if res.Status != core.StatusRejected || res.Reason != ReasonRedirects || len(res.Network) != 6 {
		t.Errorf("redirect loop: %s %s %d hops", res.Status, res.Reason, len(res.Network))
	}
	if fr.refused.conns() != 0 {
		t.Errorf("the refused server saw %d connections", fr.refused.conns())
	}
}

func TestFetchTimeout(t *testing.T) {
	fr := newFetchRig(t, func(c *FetchConfig) { c.Timeout = 300 * time.Millisecond })
	start := time.Now()
	res := fr.fetch(t, fr.policy(t), FetchRequest{URL: fr.url("/slow")})
	if res.Status != core.StatusTimeout || res.Reason != ReasonTimeout || time.Since(start) > testscale.D(5*time.Second) ||
		len(res.Network) != 1 || !res.Network[0].Allowed || res.Network[0].Reason != ReasonTimeout {
		t.Errorf("slow page: %+v after %v", res, time.Since(start))
	}
	// The caller's own end is an error, not a result.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := fr.f.Fetch(ctx, "alice", "c", fr.policy(t), FetchRequest{URL: fr.url("/page")}); !errors.Is(err, core.ErrCanceled) {
		t.Errorf("canceled caller: %v", err)
	}
}

func TestFetchBadRequests(t *testing.T) {
	fr := newFetchRig(t, nil)
	for _, req := range []FetchRequest{
		{URL: "ftp://allowed.test/x"},
		{URL: "allowed.test/page"},
		{URL: "http://user:pw@allowed.test/"},
		{URL: "http:///nohost"},
		{URL: "http://allowed.test/", MaxBytes: -1},
	} {
		_, err := fr.f.Fetch(t.Context(), "alice", "c", fr.policy(t), req)
		if !errors.Is(err, core.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", req, err)
		}
	}
}
