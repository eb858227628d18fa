package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/browsertest"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/state"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/prometheus/client_golang/prometheus"
)

// Plain test keys; the server only ever sees their hashes.
const (
	keyAlice = "alice-key-0123456789abcdef"
	keyBob   = "bob-key-0123456789abcdef00"
)

func TestMain(m *testing.M) {
	// Response bodies the conformance check must decode beyond kin-openapi's
	// defaults (a test-only registration in kin-openapi's decoder table).
	openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("*/*", openapi3filter.FileBodyDecoder)
	chromium = browsertest.NewChromium()
	code := m.Run()
	chromium.Close()
	os.Exit(code)
}

// chromium is the one Chromium this binary's browser tests share, a tab
// and browser context each (TestMain makes and closes it).
var chromium *browsertest.Chromium

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// harness is a Server with fakes, and helpers that check every answer
// against the OpenAPI document.
type harness struct {
	t      *testing.T
	srv    *Server
	disp   *fakeDispatcher
	sess   *fakeSessions
	runs   *fakeRuns
	clock  *fakeClock
	reg    *prometheus.Registry
	oa     *oaValidator
	checks map[string]error
}

// newHarness builds a server for alice and bob; mut may change the config
// and deps before New.
func newHarness(t *testing.T, mut func(*Config, *Deps)) *harness {
	t.Helper()
	ks, err := keys.New("alice:"+keyAlice, "bob:"+keyBob)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, disp: &fakeDispatcher{}, sess: newFakeSessions(), runs: newFakeRuns(),
		clock: &fakeClock{now: t0}, reg: prometheus.NewRegistry(), checks: map[string]error{}}
	cfg := Config{
		Keys:         ks,
		RateBurst:    1000,
		InputFolders: map[string]string{"sales": salesDir(t)},
		Now:          h.clock.Now,
		Heartbeat:    time.Hour,
	}
	deps := Deps{
		Dispatcher: h.disp, Sessions: h.sess, Runs: h.runs,
		Batches:    state.NewMemory(time.Now),
		Registerer: h.reg, Gatherer: h.reg,
		Checks: []ReadinessCheck{
			{Name: "docker", Check: func(context.Context) error { return h.checks["docker"] }},
			{Name: "redis", Check: func(context.Context) error { return h.checks["redis"] }},
		},
	}
	if mut != nil {
		mut(&cfg, &deps)
	}
	h.srv, err = New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	h.sess.snapState = h.srv.deps.State
	h.oa = newOAValidator(t)
	return h
}

// response is a finished answer.
type response struct {
	Code   int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a map.
func (r response) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not JSON (%v): %s", err, r.Body)
	}
	return m
}

// errCode returns the error code of an error body.
func (r response) errCode(t *testing.T) core.Code {
	t.Helper()
	e, _ := r.JSON(t)["error"].(map[string]any)
	if e == nil {
		t.Fatalf("no error object in %s", r.Body)
	}
	return core.Code(e["code"].(string))
}

// do sends a request as key ("" for none) and checks the answer against
// the OpenAPI document. body is nil, a string, []byte or a value to JSON.
// hdr are extra header name/value pairs.
func (h *harness) do(key, method, path string, body any, hdr ...string) response {
	h.t.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			h.t.Fatal(err)
		}
	}
	req := httptest.NewRequest(method, path, bytes.NewReader(raw))
	if body != nil {
		if _, isBytes := body.([]byte); isBytes {
			req.Header.Set("Content-Type", "application/octet-stream")
		} else {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.srv.ServeHTTP(rec, req)
	res := response{Code: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	h.oa.check(h.t, req, raw, res)
	return res
}

// must fails the test unless the answer has the wanted status.
func (r response) must(t *testing.T, code int) response {
	t.Helper()
	if r.Code != code {
		t.Fatalf("status %d, want %d: %s", r.Code, code, r.Body)
	}
	return r
}

// oaValidator checks real answers against openapi.json.
type oaValidator struct {
	doc    *openapi3.T
	router routers.Router
	mu     sync.Mutex
	seen   map[string]bool // "METHOD /template STATUS" validated
}

func newOAValidator(t *testing.T) *oaValidator {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(OpenAPI())
	if err != nil {
		t.Fatalf("load openapi.json: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("openapi.json is not valid: %v", err)
	}
	r, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &oaValidator{doc: doc, router: r, seen: map[string]bool{}}
}

// check fails the test when the answer (or, for 2xx answers, the
// request) does not match the document.
func (v *oaValidator) check(t *testing.T, req *http.Request, body []byte, res response) {
	t.Helper()
	if err := v.validate(req, body, res); err != nil {
		t.Errorf("OpenAPI: %s %s → %d: %v\nbody: %.300s", req.Method, req.URL, res.Code, err, res.Body)
	}
}

// validate checks one exchange. Routes outside the document (UI assets,
// nested file paths, unknown routes) are skipped.
func (v *oaValidator) validate(req *http.Request, body []byte, res response) error {
	r2 := req.Clone(context.Background())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	route, params, err := v.router.FindRoute(r2)
	if err != nil {
		return nil
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true}
	in := &openapi3filter.RequestValidationInput{Request: r2, PathParams: params, Route: route, Options: opts}
	if res.Code < 300 {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			return fmt.Errorf("request does not match: %w", err)
		}
	}
	hdr := res.Header.Clone()
	if ct := hdr.Get("Content-Type"); strings.HasPrefix(ct, "image/") || ct == "application/octet-stream" {
		hdr.Set("Content-Type", "application/octet-stream") // decoded by the */* entry
	}
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: res.Code, Header: hdr, Body: io.NopCloser(bytes.NewReader(res.Body)), Options: opts,
	})
	if err != nil {
		return fmt.Errorf("answer does not match: %w", err)
	}
	v.mu.Lock()
	v.seen[req.Method+" "+route.Path+" "+strconv.Itoa(res.Code)] = true
	v.mu.Unlock()
	return nil
}

// chunked builds a request as alice whose body has no Content-Length.
func chunked(method, path, body string) *http.Request {
	req := httptest.NewRequest(method, path, io.MultiReader(strings.NewReader(body)))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	req.Header.Set("Content-Type", "application/json")
	return req
}

// serve runs one request through h without OpenAPI checks.
func serve(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// salesDir makes the test's "sales" input folder: a real, private folder
// (host paths must exist to be offered).
func salesDir(t *testing.T) string {
	d := filepath.Join(t.TempDir(), "srv-data-sales")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}
