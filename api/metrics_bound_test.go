package api

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// randomLetters returns n random ASCII letters.
func randomLetters(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('A' + r.IntN(26))
	}
	return string(b)
}

// TestMetricsCardinalityBounded is the 62 MiB /metrics attack of issue 10:
// 60 unauthenticated requests with random 60,000-letter methods and random
// paths, over real HTTP. /metrics must grow by less than 64 KiB.
func TestMetricsCardinalityBounded(t *testing.T) {
	r := newRealAPI(t, nil)
	metricsSize := func() int {
		code, body := r.do("", "GET", "/metrics", nil, 0)
		if code != 200 {
			t.Fatalf("/metrics: %d", code)
		}
		return len(body)
	}
	before := metricsSize()
	rng := rand.New(rand.NewPCG(10, 10))
	for i := range 60 {
		method := randomLetters(rng, 60_000)
		path := "/" + randomLetters(rng, 200)
		if i%2 == 1 {
			path = "/v1/" + randomLetters(rng, 200) // unmatched under /v1, no key
		}
		code, _ := r.do("", method, path, nil, 0)
		if code != 404 && code != 401 {
			t.Fatalf("random request %d: %d", i, code)
		}
	}
	after := metricsSize()
	t.Logf("/metrics %d bytes before, %d after 60 random-method requests", before, after)
	if after-before >= 64<<10 {
		t.Fatalf("/metrics grew by %d bytes", after-before)
	}
	code, body := r.do("", "GET", "/metrics", nil, 0)
	if code != 200 || !strings.Contains(string(body), `method="other",route="unmatched"`) {
		t.Fatalf("folded labels missing: %d", code)
	}
}

// TestMetricsSeparateAddrAndKey: with MetricsAddr the main listener has no
// /metrics; the metrics listener serves it behind MetricsKey.
func TestMetricsSeparateAddrAndKey(t *testing.T) {
	const mkey = "metrics-key-0123456789"
	r := newRealAPI(t, func(c *Config, _ *Deps) { c.MetricsAddr, c.MetricsKey = "127.0.0.1:0", mkey })
	if code, _ := r.do("", "GET", "/metrics", nil, 0); code != 404 {
		t.Fatalf("main listener still serves /metrics: %d", code)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.srv.ServeMetrics(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	get := func(key string) int {
		req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/metrics", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := get(""); code != 401 {
		t.Errorf("no key: %d", code)
	}
	if code := get(keyAlice); code != 401 {
		t.Errorf("an API key is not the metrics key: %d", code)
	}
	if code := get(mkey); code != 200 {
		t.Errorf("metrics key: %d", code)
	}
}

// TestPublicRoutesRateLimitedPerAddress: the probes, the contract and
// unknown routes spend a per-address bucket; a key's /v1 budget is apart.
func TestPublicRoutesRateLimitedPerAddress(t *testing.T) {
	h := newHarness(t, func(c *Config, _ *Deps) { c.PublicRatePerSecond, c.PublicRateBurst = 1, 3 })
	for _, p := range []string{"/healthz", "/openapi.json", "/nope"} {
		h.do("", "GET", p, nil)
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/openapi.json", "/", "/nope"} {
		if res := h.do("", "GET", p, nil); res.Code != 429 || res.errCode(t) != "rate_limited" {
			t.Errorf("%s after the burst: %d", p, res.Code)
		}
	}
	// an unknown key also spends the address's tokens
	if res := h.do("wrong-key-0123456789", "GET", "/v1/tools", nil); res.Code != 429 {
		t.Errorf("unauthenticated /v1 after the burst: %d", res.Code)
	}
	if res := h.do(keyAlice, "GET", "/v1/tools", nil); res.Code != 200 {
		t.Errorf("a key's own budget: %d", res.Code)
	}
	// another address has its own bucket
	req := httptest.NewRequest("GET", "/healthz", nil)
	req.RemoteAddr = "192.0.2.7:5555"
	if rec := serve(h.srv, req); rec.Code != 200 {
		t.Errorf("other address: %d", rec.Code)
	}
}
