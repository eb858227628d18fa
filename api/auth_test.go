package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/keys"
)

func TestAuthRequired(t *testing.T) {
	h := newHarness(t, nil)
	for _, hdr := range [][]string{
		nil,
		{"Authorization", "Bearer wrong-key-0123456789abcdef"},
		{"Authorization", "Basic " + keyAlice},
		{"Authorization", "Bearer"},
		{"Authorization", keyAlice},
	} {
		r := h.do("", "GET", "/v1/tools", nil, hdr...).must(t, http.StatusUnauthorized)
		if r.errCode(t) != core.ErrUnauthorized || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%v: %s %v", hdr, r.Body, r.Header)
		}
	}
	h.do("", "GET", "/v1/tools", nil, "Authorization", "bearer  "+keyAlice).must(t, http.StatusOK)
	if len(h.disp.calls) != 0 {
		t.Fatal("unauthenticated call reached the dispatcher")
	}
}

// Everything alice makes is invisible to bob: 404, never 403.
func TestAuthIsolationBetweenKeys(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.openSession(keyAlice)
	h.do(keyAlice, "PUT", "/v1/sessions/"+sid+"/files/a.csv", []byte("x")).must(t, http.StatusOK)
	m := h.do(keyAlice, "POST", "/v1/sessions/"+sid+"/tool-calls", py("plot")).must(t, http.StatusOK).JSON(t)
	surl := m["result"].(map[string]any)["artifacts"].([]any)[0].(map[string]any)["url"].(string)
	m = h.do(keyAlice, "POST", "/v1/tool-calls", py("plot")).must(t, http.StatusOK).JSON(t)
	aurl := m["result"].(map[string]any)["artifacts"].([]any)[0].(map[string]any)["url"].(string)
	rid := h.startRun(keyAlice, map[string]any{"goal": "x", "session_id": sid})

	body := py("print(1)")
	body["session_id"] = sid
	checks := []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/sessions/" + sid, nil},
		{"DELETE", "/v1/sessions/" + sid, nil},
		{"POST", "/v1/sessions/" + sid + "/tool-calls", py("print(1)")},
		{"POST", "/v1/tool-calls", body},
		{"PUT", "/v1/sessions/" + sid + "/files/a.csv", []byte("evil")},
		{"GET", "/v1/sessions/" + sid + "/files/a.csv", nil},
		{"GET", surl, nil},
		{"GET", aurl, nil},
		{"GET", "/v1/runs/" + rid, nil},
		{"GET", "/v1/runs/" + rid + "/events", nil},
		{"POST", "/v1/runs/" + rid + "/cancel", nil},
		{"POST", "/v1/runs", map[string]any{"goal": "x", "session_id": sid}},
	}
	for _, c := range checks {
		r := h.do(keyBob, c.method, c.path, c.body)
		if r.Code != http.StatusNotFound || r.errCode(t) != core.ErrNotFound {
			t.Errorf("bob %s %s: %d %s", c.method, c.path, r.Code, r.Body)
		}
	}
	// Alice still has everything, untouched.
	h.do(keyAlice, "GET", "/v1/sessions/"+sid, nil).must(t, http.StatusOK)
	if r := h.do(keyAlice, "GET", "/v1/sessions/"+sid+"/files/a.csv", nil).must(t, http.StatusOK); string(r.Body) != "x" {
		t.Fatalf("file changed: %q", r.Body)
	}
	h.do(keyAlice, "GET", surl, nil).must(t, http.StatusOK)
	h.do(keyAlice, "GET", "/v1/runs/"+rid, nil).must(t, http.StatusOK)
}

func TestInsecureLocalNeedsNoKey(t *testing.T) {
	h := newHarness(t, func(c *Config, d *Deps) {
		c.Keys, c.InsecureLocal, c.CORSOrigins = nil, true, []string{"http://localhost:3000"}
	})
	local := func(host string, hdr ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/v1/tool-calls", strings.NewReader(`{"function":{"name":"run_python","arguments":{"code":"print(1)"}}}`))
		req.Host = host
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		return serve(h.srv, req)
	}
	for _, host := range []string{"127.0.0.1:8080", "localhost:8080", "[::1]:8080"} {
		if rec := local(host); rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", host, rec.Code, rec.Body)
		}
	}
	if o := h.disp.lastCall().Owner; o != "local" {
		t.Fatalf("owner %q", o)
	}
	ok := []string{"Origin", "http://127.0.0.1:8080"}
	if rec := local("127.0.0.1:8080", ok...); rec.Code != http.StatusOK {
		t.Fatalf("same origin: %d", rec.Code)
	}
	if rec := local("127.0.0.1:8080", "Origin", "http://localhost:3000"); rec.Code != http.StatusOK {
		t.Fatalf("allowlisted origin: %d", rec.Code)
	}
	n := len(h.disp.calls)
	// DNS rebinding (a foreign Host) and cross-site forgery (a foreign Origin) are refused.
	for _, rec := range []*httptest.ResponseRecorder{
		local("evil.example:8080"),
		local("127.0.0.1:8080", "Origin", "https://evil.example"),
		local("127.0.0.1:8080", "Origin", "null"),
	} {
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%d %s", rec.Code, rec.Body)
		}
	}
	if len(h.disp.calls) != n {
		t.Fatal("a refused request reached the dispatcher")
	}
}

func TestRateLimitPerKey(t *testing.T) {
	h := newHarness(t, func(c *Config, d *Deps) { c.RatePerSecond, c.RateBurst = 0.5, 2 })
	h.do(keyAlice, "GET", "/v1/tools", nil).must(t, http.StatusOK)
	h.do(keyAlice, "GET", "/v1/tools", nil).must(t, http.StatusOK)
	r := h.do(keyAlice, "GET", "/v1/tools", nil).must(t, http.StatusTooManyRequests)
	if r.errCode(t) != core.ErrRateLimited || r.Header.Get("Retry-After") != "2" {
		t.Fatalf("%s %v", r.Body, r.Header)
	}
	h.do(keyAlice, "POST", "/v1/tool-calls", py("print(1)")).must(t, http.StatusTooManyRequests)
	h.do(keyBob, "GET", "/v1/tools", nil).must(t, http.StatusOK) // buckets are per key
	h.clock.Advance(time.Second)
	h.do(keyAlice, "GET", "/v1/tools", nil).must(t, http.StatusTooManyRequests) // half a token
	h.clock.Advance(time.Second)
	h.do(keyAlice, "GET", "/v1/tools", nil).must(t, http.StatusOK)
	h.clock.Advance(time.Hour) // refills only up to the burst
	h.do(keyAlice, "GET", "/v1/tools", nil).must(t, http.StatusOK)
	h.do(keyAlice, "GET", "/v1/tools", nil).must(t, http.StatusOK)
	h.do(keyAlice, "GET", "/v1/tools", nil).must(t, http.StatusTooManyRequests)
	h.do("", "GET", "/healthz", nil).must(t, http.StatusOK) // probes are not rate limited
	if len(h.disp.calls) != 0 {
		t.Fatal("a rate-limited call reached the dispatcher")
	}
}

func TestRateLimitDisabled(t *testing.T) {
	h := newHarness(t, func(c *Config, d *Deps) { c.RatePerSecond, c.RateBurst = -1, 1 })
	for range 5 {
		h.do(keyAlice, "GET", "/v1/tools", nil).must(t, http.StatusOK)
	}
}

func TestCORS(t *testing.T) {
	h := newHarness(t, func(c *Config, d *Deps) { c.CORSOrigins = []string{"https://app.example"} })
	r := h.do("", "OPTIONS", "/v1/tool-calls", nil, "Origin", "https://app.example", "Access-Control-Request-Method", "POST")
	if r.Code != http.StatusNoContent || r.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(r.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("preflight %d %v", r.Code, r.Header)
	}
	r = h.do("", "OPTIONS", "/v1/tool-calls", nil, "Origin", "https://evil.example", "Access-Control-Request-Method", "POST")
	if r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("disallowed origin got CORS headers: %v", r.Header)
	}
	r = h.do(keyAlice, "GET", "/v1/tools", nil, "Origin", "https://app.example").must(t, http.StatusOK)
	if r.Header.Get("Access-Control-Allow-Origin") != "https://app.example" || !strings.Contains(r.Header.Get("Access-Control-Expose-Headers"), "Retry-After") {
		t.Fatalf("%v", r.Header)
	}
	r = h.do(keyAlice, "GET", "/v1/tools", nil, "Origin", "https://evil.example").must(t, http.StatusOK)
	if r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("disallowed origin allowed")
	}
	hs := newHarness(t, func(c *Config, d *Deps) { c.CORSOrigins = []string{"*"} })
	r = hs.do("", "GET", "/healthz", nil, "Origin", "https://any.example")
	if r.Header.Get("Access-Control-Allow-Origin") != "https://any.example" {
		t.Fatalf("wildcard: %v", r.Header)
	}
}

func TestValidateListen(t *testing.T) {
	ks, _ := keys.New(keyAlice)
	cases := []struct {
		addr     string
		insecure bool
		keys     *keys.Set
		ok       bool
	}{
		{"127.0.0.1:8080", true, nil, true},
		{"[::1]:8080", true, nil, true},
		{"localhost:8080", true, nil, true},
		{"127.0.0.2:8080", true, nil, true},
		{"0.0.0.0:8080", true, nil, false},
		{":8080", true, nil, false},
		{"192.168.1.5:8080", true, nil, false},
		{"example.com:8080", true, nil, false},
		{"127.0.0.1:8080", true, ks, false},
		{"0.0.0.0:8080", false, ks, true},
		{"0.0.0.0:8080", false, nil, false},
		{"no-port", false, ks, false},
	}
	for _, c := range cases {
		err := ValidateListen(c.addr, c.insecure, c.keys)
		if (err == nil) != c.ok {
			t.Errorf("%s insecure=%v keys=%d: %v", c.addr, c.insecure, c.keys.Len(), err)
		}
	}
}
