package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
)

// call builds a tool-call body with arguments as a JSON string.
func call(name, argName, code string) map[string]any {
	args, _ := json.Marshal(map[string]string{argName: code})
	return map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": name, "arguments": string(args)}}
}

func py(code string) map[string]any { return call("run_python", "code", code) }

func TestListTools(t *testing.T) {
	h := newHarness(t, nil)
	m := h.do(keyAlice, "GET", "/v1/tools", nil).must(t, http.StatusOK).JSON(t)
	tools := m["tools"].([]any)
	if len(tools) != 2 || tools[0].(map[string]any)["type"] != "function" {
		t.Fatalf("tools %v", m)
	}
}

func TestToolCallOK(t *testing.T) {
	h := newHarness(t, nil)
	m := h.do(keyAlice, "POST", "/v1/tool-calls", py("print(1)")).must(t, http.StatusOK).JSON(t)
	msg := m["message"].(map[string]any)
	res := m["result"].(map[string]any)
	if msg["role"] != "tool" || msg["tool_call_id"] != "call_1" || msg["content"] != "1\n" {
		t.Fatalf("message %v", msg)
	}
	if res["status"] != "ok" || res["stdout"] != "1\n" || res["exit_code"] != 0.0 {
		t.Fatalf("result %v", res)
	}
	c := h.disp.lastCall()
	if c.Owner != "alice" || c.Caller != "api" || c.Name != "run_python" || c.SessionID != "" {
		t.Fatalf("dispatcher got %+v", c)
	}
}

func TestToolCallArgumentsAsObjectAndGeneratedID(t *testing.T) {
	h := newHarness(t, nil)
	body := map[string]any{"function": map[string]any{"name": "run_python", "arguments": map[string]any{"code": "print(1)"}}}
	m := h.do(keyAlice, "POST", "/v1/tool-calls", body).must(t, http.StatusOK).JSON(t)
	id := m["message"].(map[string]any)["tool_call_id"].(string)
	if !strings.HasPrefix(id, "call_") || len(id) < 10 {
		t.Fatalf("generated id %q", id)
	}
	if got := string(h.disp.lastCall().Arguments); got != `{"code":"print(1)"}` {
		t.Fatalf("arguments passed as %s", got)
	}
}

func TestToolCallLimitsAndInput(t *testing.T) {
	h := newHarness(t, nil)
	body := py("print(1)")
	body["limits"] = map[string]any{"memory_bytes": 1 << 26, "cpus": 0.5, "timeout_seconds": 2.5, "pids": 32}
	body["input"] = "sales"
	h.do(keyAlice, "POST", "/v1/tool-calls", body).must(t, http.StatusOK)
	c := h.disp.lastCall()
	if c.Limits.Memory != 1<<26 || c.Limits.CPUs != 0.5 || c.Limits.Timeout != 2500*time.Millisecond || c.Limits.Pids != 32 {
		t.Fatalf("limits %+v", c.Limits)
	}
	if c.Mount != h.srv.cfg.InputFolders["sales"] || c.MountName != "sales" {
		t.Fatalf("mount %q", c.Mount)
	}
}

// Refusals and failures of the user's code are 200s with a tool message.
func TestToolCallRefusedOrFailedIs200(t *testing.T) {
	h := newHarness(t, nil)
	cases := []struct {
		body         map[string]any
		status       string
		reason, text string
	}{
		{call("delete_everything", "x", "y"), "rejected", "unknown_tool", "unknown tool"},
		{call("execute_shell", "command", "rm -rf /"), "rejected", "policy:shell.rm_root", "refused"},
		{map[string]any{"id": "c", "function": map[string]any{"name": "run_python", "arguments": "{not json"}}, "rejected", "invalid_json", "not a JSON object"},
		{py("raise ValueError('boom')"), "error", "", "ValueError"},
		{py("needs approval"), "pending_approval", "", "approval"},
		{py("ended"), "timeout", "", ""},
	}
	for _, c := range cases {
		m := h.do(keyAlice, "POST", "/v1/tool-calls", c.body).must(t, http.StatusOK).JSON(t)
		res := m["result"].(map[string]any)
		msg := m["message"].(map[string]any)
		if res["status"] != c.status || (c.reason != "" && res["reason"] != c.reason) || !strings.Contains(msg["content"].(string), c.text) {
			t.Errorf("%v: got %s", c.body["function"], m)
		}
		if msg["role"] != "tool" {
			t.Errorf("no tool message: %v", m)
		}
	}
	m := h.do(keyAlice, "POST", "/v1/tool-calls", py("raise")).JSON(t)
	if m["result"].(map[string]any)["exit_code"] != 1.0 || m["result"].(map[string]any)["stderr"] != "ValueError: boom\n" {
		t.Fatalf("error result %v", m)
	}
	m = h.do(keyAlice, "POST", "/v1/tool-calls", py("approval")).JSON(t)
	if m["result"].(map[string]any)["approval_token"] != "tok-1" {
		t.Fatalf("approval token missing %v", m)
	}
}

func TestToolCallArtifactURL(t *testing.T) {
	h := newHarness(t, nil)
	m := h.do(keyAlice, "POST", "/v1/tool-calls", py("plot()")).must(t, http.StatusOK).JSON(t)
	arts := m["result"].(map[string]any)["artifacts"].([]any)
	if len(arts) != 1 {
		t.Fatalf("artifacts %v", m)
	}
	a := arts[0].(map[string]any)
	url, _ := a["url"].(string)
	if !strings.HasPrefix(url, "/v1/artifacts/art_") || a["mime"] != "image/png" || a["data"] != nil {
		t.Fatalf("artifact %v", a)
	}
	if bytes.Contains(h.do(keyAlice, "POST", "/v1/tool-calls", py("plot()")).Body, []byte(`"data"`)) {
		t.Fatal("artifact bytes leaked into JSON")
	}
	r := h.do(keyAlice, "GET", url, nil).must(t, http.StatusOK)
	if r.Header.Get("Content-Type") != "image/png" || !bytes.Equal(r.Body, pngBytes()) {
		t.Fatalf("artifact answer %v", r.Header)
	}
	if r.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(r.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("artifact served without protection headers: %v", r.Header)
	}
	if r := h.do(keyBob, "GET", url, nil).must(t, http.StatusNotFound); r.errCode(t) != core.ErrNotFound {
		t.Fatal(string(r.Body))
	}
	h.do(keyAlice, "GET", "/v1/artifacts/art_nope", nil).must(t, http.StatusNotFound)
}

func TestToolCallBadRequests(t *testing.T) {
	h := newHarness(t, nil)
	neg := py("x")
	neg["limits"] = map[string]any{"memory_bytes": -1}
	typo := py("x")
	typo["limits"] = map[string]any{"memroy": 1}
	input := py("x")
	input["input"] = "/etc"
	cases := map[string]any{
		"malformed":      `{"function": `,
		"empty":          "",
		"array":          `[]`,
		"no name":        map[string]any{"type": "function", "function": map[string]any{"arguments": "{}"}},
		"wrong type":     map[string]any{"type": "code", "function": map[string]any{"name": "run_python"}},
		"unknown field":  map[string]any{"function": map[string]any{"name": "run_python"}, "sesion_id": "x"},
		"negative limit": neg,
		"limits typo":    typo,
		"host path":      input,
		"trailing data":  `{"function":{"name":"run_python"}} {}`,
	}
	for name, body := range cases {
		r := h.do(keyAlice, "POST", "/v1/tool-calls", body)
		if r.Code != http.StatusBadRequest || r.errCode(t) != core.ErrInvalid {
			t.Errorf("%s: %d %s", name, r.Code, r.Body)
		}
	}
	if len(h.disp.calls) != 0 {
		t.Fatalf("malformed requests reached the dispatcher: %d", len(h.disp.calls))
	}
}

func TestToolCallTooLarge(t *testing.T) {
	h := newHarness(t, func(c *Config, d *Deps) { c.MaxBodyBytes = 512 })
	r := h.do(keyAlice, "POST", "/v1/tool-calls", py(strings.Repeat("x", 1024))).must(t, http.StatusRequestEntityTooLarge)
	if r.errCode(t) != core.ErrTooLarge {
		t.Fatal(string(r.Body))
	}
	// Without a Content-Length the limit applies while reading.
	req := chunked("POST", "/v1/tool-calls", strings.Repeat(" ", 600)+`{}`)
	rec := serve(h.srv, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked: %d %s", rec.Code, rec.Body)
	}
}

// Platform failures are HTTP errors; the details still carry the tool message.
func TestToolCallPlatformErrors(t *testing.T) {
	h := newHarness(t, func(c *Config, d *Deps) { c.ToolCallTimeout = 50 * time.Millisecond })
	cases := []struct {
		code   string
		status int
		ecode  core.Code
	}{
		{"busy", http.StatusTooManyRequests, core.ErrBusy},
		{"unavailable", http.StatusServiceUnavailable, core.ErrUnavailable},
		{"internal", http.StatusInternalServerError, core.ErrInternal},
		{"sleep", http.StatusGatewayTimeout, core.ErrDeadline},
		{"panic", http.StatusInternalServerError, core.ErrInternal},
	}
	for _, c := range cases {
		r := h.do(keyAlice, "POST", "/v1/tool-calls", py(c.code))
		if r.Code != c.status || r.errCode(t) != c.ecode {
			t.Errorf("%s: %d %s", c.code, r.Code, r.Body)
			continue
		}
		if c.code != "panic" {
			det := r.JSON(t)["error"].(map[string]any)["details"].(map[string]any)
			if det["tool_message"].(map[string]any)["role"] != "tool" {
				t.Errorf("%s: details %v", c.code, det)
			}
		}
		if c.status == http.StatusTooManyRequests && r.Header.Get("Retry-After") != "1" {
			t.Errorf("busy without Retry-After: %v", r.Header)
		}
	}
	if r := h.do(keyAlice, "POST", "/v1/tool-calls", map[string]any{"function": map[string]any{"name": "run_python"}, "session_id": "ses_nope"}); r.Code != http.StatusNotFound {
		t.Fatalf("unknown session: %d", r.Code)
	}
}

func TestConcurrencyLimitPerKey(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	h := newHarness(t, func(c *Config, d *Deps) { c.MaxConcurrentPerKey = 1 })
	h.disp.run = func(ctx context.Context, c dispatcher.Call) dispatcher.Result {
		if strings.Contains(string(c.Arguments), "block") {
			close(started)
			<-release
		}
		return scripted(ctx, c)
	}
	done := make(chan response)
	go func() { done <- h.do(keyAlice, "POST", "/v1/tool-calls", py("block")) }()
	<-started
	r := h.do(keyAlice, "POST", "/v1/tool-calls", py("print(1)")).must(t, http.StatusTooManyRequests)
	if r.errCode(t) != core.ErrBusy || r.Header.Get("Retry-After") == "" {
		t.Fatalf("%s %v", r.Body, r.Header)
	}
	h.do(keyBob, "POST", "/v1/tool-calls", py("print(1)")).must(t, http.StatusOK) // other keys are not held up
	close(release)
	(<-done).must(t, http.StatusOK)
	h.do(keyAlice, "POST", "/v1/tool-calls", py("print(1)")).must(t, http.StatusOK)
}
