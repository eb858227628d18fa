package mcpserver

import (
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
)

// TestForkedFromSessionClosedWithTheMCPSession: after fork_session the
// calls run in the fork, and when the MCP session ends both the fork and
// the session it was forked from are closed; the original was left open
// (out of reach of the model, holding the key's sessions budget until it
// expired: the next `airlock mcp` got 429 after a few forks).
func TestForkedFromSessionClosedWithTheMCPSession(t *testing.T) {
	var mu sync.Mutex
	var deleted []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/info":
			_, _ = w.Write([]byte(`{"auth_required":true,"sessions":true,"max_upload_bytes":1,"inputs":[]}`))
		case r.URL.Path == "/v1/tools":
			_, _ = w.Write([]byte(`{"tools":[{"type":"function","function":{"name":"run_python","description":"Run Python.","parameters":{"type":"object","properties":{"code":{"type":"string"}},"required":["code"]}}}]}`))
		case r.Method == http.MethodPost && r.URL.Path == "/v1/sessions":
			_, _ = w.Write([]byte(`{"id":"sess_1"}`))
		case r.Method == http.MethodPost && r.URL.Path == "/v1/sessions/sess_1/fork":
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"id":"sess_2"}`))
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/tool-calls"):
			_, _ = w.Write([]byte(`{"message":{"role":"tool","tool_call_id":"c","content":"ok: 1"},"result":{"tool_call_id":"c","name":"run_python","status":"ok","exit_code":0,"stdout":"1\n","stderr":"","truncated":false,"artifacts":[]}}`))
		case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/v1/sessions/"):
			mu.Lock()
			deleted = append(deleted, strings.TrimPrefix(r.URL.Path, "/v1/sessions/"))
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ts.Close)
	_, cs := remoteSession(t, ts)
	if res := call(t, cs, "run_python", map[string]any{"code": "x = 1"}); res.IsError {
		t.Fatalf("call: %q", text(t, res))
	}
	if res := call(t, cs, "fork_session", map[string]any{}); res.IsError || !strings.Contains(text(t, res), "sess_2") {
		t.Fatalf("fork: %q", text(t, res))
	}
	_ = cs.Close()
	waitFor(t, "both sessions to be closed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(deleted) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	sort.Strings(deleted)
	if strings.Join(deleted, " ") != "sess_1 sess_2" {
		t.Fatalf("closed %v, want sess_1 and sess_2", deleted)
	}
}
