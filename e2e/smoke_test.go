package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// contract checks live answers against the OpenAPI document the server
// itself serves at /openapi.json.
type contract struct {
	t      *testing.T
	base   string
	router routers.Router
	seen   map[string]bool // "METHOD /template STATUS" checked against the document
}

var registerDecoders sync.Once

// newContract loads and validates the served document.
func newContract(t *testing.T, base string) *contract {
	t.Helper()
	registerDecoders.Do(func() {
		openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder)
		openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
		openapi3filter.RegisterBodyDecoder("*/*", openapi3filter.FileBodyDecoder)
	})
	raw := do(t, "GET", base+"/openapi.json", nil).must(t, http.StatusOK).Body
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		t.Fatalf("load /openapi.json: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("/openapi.json is not a valid document: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Errorf("openapi version %q, want 3.1.x", doc.OpenAPI)
	}
	r, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &contract{t: t, base: base, router: r, seen: map[string]bool{}}
}

// do sends a request to the live server and fails the test when the
// answer does not match the document (routes outside it are not checked).
func (c *contract) do(method, path string, body any, hdr ...string) response {
	c.t.Helper()
	res := do(c.t, method, c.base+path, body, hdr...)
	req, err := request(context.Background(), method, c.base+path, body, hdr...)
	if err != nil {
		c.t.Fatal(err)
	}
	raw, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(raw))
	// The document's server is "/": match on the path alone.
	req.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return res // not a documented route (UI assets, nested file paths)
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	if res.Status < 300 {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			c.t.Errorf("OpenAPI: request %s %s does not match: %v", method, path, err)
		}
	}
	hdrs := res.Header.Clone()
	if ct := hdrs.Get("Content-Type"); strings.HasPrefix(ct, "image/") || ct == "application/octet-stream" {
		hdrs.Set("Content-Type", "application/octet-stream")
	}
	if err := openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: res.Status, Header: hdrs, Body: io.NopCloser(bytes.NewReader(res.Body)), Options: opts,
	}); err != nil {
		c.t.Errorf("OpenAPI: answer of %s %s (%d) does not match: %v\n%.300s", method, path, res.Status, err, res.Body)
	}
	c.seen[method+" "+route.Path+" "+strconv.Itoa(res.Status)] = true
	return res
}

// TestServeSmoke is `make run` followed by the README's curl examples:
// every main route of a fresh `airlock serve --insecure-local` answers as
// documented, checked against the served OpenAPI document.
func TestServeSmoke(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	srv := startServe(t)
	api := newContract(t, srv.URL)

	// Probes, metrics, the page and its info.
	if h := api.do("GET", "/healthz", nil).must(t, http.StatusOK).JSON(t); h["status"] != "ok" {
		t.Errorf("/healthz %v", h)
	}
	ready := api.do("GET", "/readyz", nil).must(t, http.StatusOK).JSON(t)
	checks, _ := ready["checks"].(map[string]any)
	if ready["status"] != "ready" || checks["docker"] != "ok" || checks["queue"] != "ok" {
		t.Errorf("/readyz %v", ready)
	}
	page := api.do("GET", "/", nil).must(t, http.StatusOK)
	if !strings.Contains(string(page.Body), "<title>Airlock</title>") {
		t.Errorf("/ is not the UI: %.200s", page.Body)
	}
	info := api.do("GET", "/v1/info", nil).must(t, http.StatusOK).JSON(t)
	if info["auth_required"] != false || info["model_configured"] != false {
		t.Errorf("/v1/info %v", info)
	}

	// The tools, as an OpenAI tools array.
	var tools struct {
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string         `json:"name"`
				Parameters map[string]any `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(api.do("GET", "/v1/tools", nil).must(t, http.StatusOK).Body, &tools); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		if tl.Type != "function" || tl.Function.Parameters["type"] != "object" {
			t.Errorf("tool %q is not an OpenAI function tool", tl.Function.Name)
		}
		names[tl.Function.Name] = true
	}
	if !names["run_python"] || !names["execute_shell"] {
		t.Fatalf("tools %v lack run_python or execute_shell", names)
	}

	// One tool call, exactly as in the README: arguments as a string, limits.
	c := decodeCall(t, api.do("POST", "/v1/tool-calls", `{
	  "id": "call_1", "type": "function",
	  "function": {"name": "run_python", "arguments": "{\"code\": \"print(6*7)\"}"},
	  "limits": {"timeout_seconds": 5, "memory_bytes": 268435456}}`))
	if c.mustOK(t) != "42\n" || c.Message.Role != "tool" || c.Message.ToolCallID != "call_1" || c.Result.ToolCallID != "call_1" || !strings.Contains(c.Message.Content, "42") {
		t.Errorf("print(6*7): %+v", c)
	}
	// Arguments as an object; a shell command.
	c = decodeCall(t, api.do("POST", "/v1/tool-calls", map[string]any{"type": "function",
		"function": map[string]any{"name": "execute_shell", "arguments": map[string]any{"command": "echo $((6*7)) airlock"}}}))
	if out := c.mustOK(t); out != "42 airlock\n" {
		t.Errorf("shell stdout %q", out)
	}
	// Failing code and a refused call are 200s with a tool message.
	c = decodeCall(t, api.do("POST", "/v1/tool-calls", toolCall("call_exit", "run_python", map[string]any{"code": "import sys; sys.exit(3)"})))
	if c.Result.Status != "error" || c.Result.ExitCode == nil || *c.Result.ExitCode != 3 || c.Message.Content == "" {
		t.Errorf("sys.exit(3): %+v", c.Result)
	}
	c = decodeCall(t, api.do("POST", "/v1/tool-calls", toolCall("call_nope", "no_such_tool", map[string]any{})))
	if c.Result.Status != "rejected" || c.Message.ToolCallID != "call_nope" || c.Message.Content == "" {
		t.Errorf("unknown tool: %+v", c)
	}
	// Malformed requests are 400 with the error envelope.
	if r := api.do("POST", "/v1/tool-calls", `{"function": `); r.Status != http.StatusBadRequest || r.errCode(t) != "bad_request" {
		t.Errorf("malformed JSON: %d %s", r.Status, r.Body)
	}
	if r := api.do("GET", "/v1/no-such-route", nil); r.Status != http.StatusNotFound || r.errCode(t) != "not_found" {
		t.Errorf("unknown route: %d %s", r.Status, r.Body)
	}
	// A plot comes back as an artifact with a download URL serving the PNG.
	c = decodeCall(t, api.do("POST", "/v1/tool-calls", toolCall("call_plot", "run_python", map[string]any{
		"code": "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.show()"})))
	c.mustOK(t)
	if len(c.Result.Artifacts) != 1 || c.Result.Artifacts[0].MIME != "image/png" || c.Result.Artifacts[0].URL == "" {
		t.Fatalf("plot artifacts %+v", c.Result.Artifacts)
	}
	png := api.do("GET", c.Result.Artifacts[0].URL, nil).must(t, http.StatusOK)
	if !bytes.HasPrefix(png.Body, []byte("\x89PNG\r\n\x1a\n")) || int64(len(png.Body)) != c.Result.Artifacts[0].Size {
		t.Errorf("artifact is not the %d-byte PNG: %d bytes %.8q", c.Result.Artifacts[0].Size, len(png.Body), png.Body)
	}

	// A session: open, upload, run twice with shared state, download, close.
	sess := api.do("POST", "/v1/sessions", nil).must(t, http.StatusCreated).JSON(t)
	sid, _ := sess["id"].(string)
	if sid == "" {
		t.Fatalf("session without id: %v", sess)
	}
	if got := api.do("GET", "/v1/sessions/"+sid, nil).must(t, http.StatusOK).JSON(t); got["id"] != sid {
		t.Errorf("GET session %v", got)
	}
	rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
	var csv strings.Builder
	csv.WriteString("month,sales\n")
	sum := 0
	for m := 1; m <= 12; m++ {
		v := rng.IntN(1000)
		sum += v
		fmt.Fprintf(&csv, "m%02d,%d\n", m, v)
	}
	put := api.do("PUT", "/v1/sessions/"+sid+"/files/sales.csv", []byte(csv.String())).must(t, http.StatusOK).JSON(t)
	if put["path"] != "sales.csv" || put["size"] != float64(csv.Len()) {
		t.Errorf("PUT file answered %v", put)
	}
	c = decodeCall(t, api.do("POST", "/v1/sessions/"+sid+"/tool-calls", map[string]any{"type": "function",
		"function": map[string]any{"name": "run_python", "arguments": map[string]any{
			"code": "import pandas as pd\ndf = pd.read_csv('sales.csv')\ntotal = int(df['sales'].sum())\nprint(total)"}}}))
	if out := c.mustOK(t); out != strconv.Itoa(sum)+"\n" {
		t.Errorf("pandas sum printed %q, want %d", out, sum)
	}
	c = decodeCall(t, api.do("POST", "/v1/sessions/"+sid+"/tool-calls", toolCall("", "run_python", map[string]any{
		"code": "import os\nos.makedirs('outputs', exist_ok=True)\nopen('outputs/out.csv', 'w').write(f'total,{total * 2}\\n')\nprint('saved')"})))
	if out := c.mustOK(t); out != "saved\n" {
		t.Errorf("second session call printed %q (state not kept?)", out)
	}
	if got := api.do("GET", "/v1/sessions/"+sid+"/files/outputs/out.csv", nil).must(t, http.StatusOK).Body; string(got) != fmt.Sprintf("total,%d\n", 2*sum) {
		t.Errorf("downloaded out.csv %q", got)
	}
	if got := api.do("GET", "/v1/sessions/"+sid+"/files/sales.csv", nil).must(t, http.StatusOK).Body; string(got) != csv.String() {
		t.Errorf("downloaded sales.csv differs from the upload")
	}
	api.do("DELETE", "/v1/sessions/"+sid, nil).must(t, http.StatusNoContent)
	if r := api.do("GET", "/v1/sessions/"+sid, nil); r.Status != http.StatusNotFound || r.errCode(t) != "not_found" {
		t.Errorf("GET a closed session: %d %s", r.Status, r.Body)
	}
	if r := api.do("POST", "/v1/sessions/"+sid+"/tool-calls", toolCall("", "run_python", map[string]any{"code": "print(1)"})); r.Status != http.StatusNotFound {
		t.Errorf("call in a closed session: %d %s", r.Status, r.Body)
	}

	// Runs without a model: 503 no_model saying how to configure one.
	if r := api.do("POST", "/v1/runs", map[string]any{"goal": "hello"}); r.Status != http.StatusServiceUnavailable || r.errCode(t) != "no_model" || !strings.Contains(string(r.Body), "OPENAI_BASE_URL") {
		t.Errorf("run without a model: %d %s", r.Status, r.Body)
	}

	// Metrics: HTTP, queue and process series, counting what just happened.
	metrics := string(api.do("GET", "/metrics", nil).must(t, http.StatusOK).Body)
	for _, want := range []string{"airlock_http_requests_total", "airlock_queue_job_seconds", "go_goroutines"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !strings.Contains(metrics, `airlock_http_requests_total{`) || !strings.Contains(metrics, `"/v1/tool-calls"`) {
		t.Errorf("/metrics does not count /v1/tool-calls requests:\n%s", grepLines(metrics, "airlock_http_requests_total"))
	}

	// The contract check really ran on the main routes.
	for _, want := range []string{"GET /healthz 200", "GET /readyz 200", "GET /metrics 200", "GET /v1/tools 200",
		"POST /v1/tool-calls 200", "POST /v1/tool-calls 400", "GET /v1/artifacts/{artifact} 200", "POST /v1/sessions 201",
		"GET /v1/sessions/{id} 200", "PUT /v1/sessions/{id}/files/{path} 200", "POST /v1/sessions/{id}/tool-calls 200",
		"DELETE /v1/sessions/{id} 204", "GET /v1/sessions/{id} 404", "POST /v1/runs 503"} {
		if !api.seen[want] {
			t.Errorf("%s was not checked against the OpenAPI document (checked: %v)", want, api.seen)
		}
	}

	// A clean stop: SIGTERM, exit 0, and none of its containers left.
	dc := requireDocker(t)
	srv.signal(syscall.SIGTERM)
	if code := srv.wait(stopTimeout); code != 0 {
		t.Errorf("airlock serve exited %d after SIGTERM", code)
	}
	poll(t, stopTimeout, "the server's containers to be removed", func() bool { return len(containers(t, dc, srv.pid())) == 0 })
}

// grepLines returns the lines of s containing sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
