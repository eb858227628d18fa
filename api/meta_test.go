package api

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/keys"
	"github.com/prometheus/client_golang/prometheus"
)

func TestHealthz(t *testing.T) {
	h := newHarness(t, nil)
	r := h.do("", "GET", "/healthz", nil).must(t, http.StatusOK)
	if r.JSON(t)["status"] != "ok" {
		t.Fatalf("body %s", r.Body)
	}
}

func TestReadyz(t *testing.T) {
	h := newHarness(t, nil)
	r := h.do("", "GET", "/readyz", nil).must(t, http.StatusOK)
	checks := r.JSON(t)["checks"].(map[string]any)
	if checks["docker"] != "ok" || checks["redis"] != "ok" {
		t.Fatalf("checks %v", checks)
	}
	h.checks["redis"] = errors.New("dial tcp: connection refused")
	r = h.do("", "GET", "/readyz", nil).must(t, http.StatusServiceUnavailable)
	if r.errCode(t) != core.ErrNotReady || r.Header.Get("Retry-After") == "" {
		t.Fatalf("answer %s %v", r.Body, r.Header)
	}
	if strings.Contains(string(r.Body), "connection refused") {
		t.Fatal("readyz leaks the error text to unauthenticated callers")
	}
	det := r.JSON(t)["error"].(map[string]any)["details"].(map[string]any)["checks"].(map[string]any)
	if det["redis"] != "unavailable" || det["docker"] != "ok" {
		t.Fatalf("details %v", det)
	}
}

func TestMetricsServesGivenGathererAndOwnMetrics(t *testing.T) {
	h := newHarness(t, nil)
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "airlock_test_marker_total", Help: "marker"})
	h.reg.MustRegister(c)
	c.Inc()
	h.do("", "GET", "/healthz", nil).must(t, http.StatusOK)
	r := h.do("", "GET", "/metrics", nil).must(t, http.StatusOK)
	for _, want := range []string{"airlock_test_marker_total 1", `airlock_http_requests_total{code="200",method="GET",route="/healthz"} 1`, "airlock_http_request_duration_seconds"} {
		if !strings.Contains(string(r.Body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestMetricsWithoutRegisterer(t *testing.T) {
	h := newHarness(t, func(c *Config, d *Deps) { d.Registerer, d.Gatherer = nil, nil })
	h.do("", "GET", "/healthz", nil).must(t, http.StatusOK)
	r := h.do("", "GET", "/metrics", nil).must(t, http.StatusOK)
	if !strings.Contains(string(r.Body), "airlock_http_requests_total") {
		t.Fatal("private registry not served")
	}
}

func TestOpenAPIServed(t *testing.T) {
	h := newHarness(t, nil)
	r := h.do("", "GET", "/openapi.json", nil).must(t, http.StatusOK)
	if r.JSON(t)["openapi"] != "3.1.0" {
		t.Fatalf("openapi version %v", r.JSON(t)["openapi"])
	}
}

func TestInfo(t *testing.T) {
	h := newHarness(t, nil)
	m := h.do("", "GET", "/v1/info", nil).must(t, http.StatusOK).JSON(t)
	if m["auth_required"] != true || m["model_configured"] != true || m["model_help"] != nil {
		t.Fatalf("info %v", m)
	}
	h.runs.configured = false
	m = h.do("", "GET", "/v1/info", nil).must(t, http.StatusOK).JSON(t)
	if m["model_configured"] != false || !strings.Contains(m["model_help"].(string), "OPENAI_BASE_URL") {
		t.Fatalf("info %v", m)
	}
	hl := newHarness(t, func(c *Config, d *Deps) { c.Keys, c.InsecureLocal, d.Runs = nil, true, nil })
	m = hl.do("", "GET", "/v1/info", nil).must(t, http.StatusOK).JSON(t)
	if m["auth_required"] != false || m["model_configured"] != false {
		t.Fatalf("info %v", m)
	}
}

func TestUI(t *testing.T) {
	h := newHarness(t, nil)
	r := h.do("", "GET", "/", nil).must(t, http.StatusOK)
	if !strings.Contains(string(r.Body), "<title>Airlock</title>") || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("index: %v %.100s", r.Header, r.Body)
	}
	if !strings.Contains(r.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatal("no CSP on the UI")
	}
	for _, f := range []string{"/ui/app.js", "/ui/style.css"} {
		h.do("", "GET", f, nil).must(t, http.StatusOK)
	}
	for _, f := range []string{"/ui/nope.js", "/ui/../openapi.go", "/ui/"} {
		if c := h.do("", "GET", f, nil).Code; c != http.StatusNotFound {
			t.Errorf("%s: %d", f, c)
		}
	}
}

func TestUnknownRouteIsJSON404(t *testing.T) {
	h := newHarness(t, nil)
	r := h.do(keyAlice, "GET", "/v2/nothing", nil).must(t, http.StatusNotFound)
	if r.errCode(t) != core.ErrNotFound {
		t.Fatal(string(r.Body))
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := New(Config{}, Deps{Dispatcher: &fakeDispatcher{}}); err == nil {
		t.Error("no keys and not insecure-local: want an error")
	}
	if _, err := New(Config{InsecureLocal: true}, Deps{}); err == nil {
		t.Error("no dispatcher: want an error")
	}
	ks, _ := keys.New(keyAlice)
	if _, err := New(Config{InsecureLocal: true, Keys: ks}, Deps{Dispatcher: &fakeDispatcher{}}); err == nil {
		t.Error("insecure-local with keys: want an error")
	}
	if _, err := New(Config{InsecureLocal: true, Addr: "0.0.0.0:8080"}, Deps{Dispatcher: &fakeDispatcher{}}); err == nil {
		t.Error("insecure-local on all interfaces: want an error")
	}
	reg := prometheus.NewRegistry()
	d := Deps{Dispatcher: &fakeDispatcher{}, Registerer: reg}
	if _, err := New(Config{InsecureLocal: true}, d); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{InsecureLocal: true}, d); err == nil {
		t.Error("registering the metrics twice: want an error")
	}
}
