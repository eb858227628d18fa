package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/api"
	"github.com/airlock-dev/airlock/client"
	"github.com/airlock-dev/airlock/internal/mcpserver"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/wire"
)

// Keys and secrets of the gate tests.
const (
	aliceKey     = "alice-gate-key-0123456789"
	bobKey       = "bob-gate-key-0123456789ab"
	aliceSecret  = "alice-db-password-4711"
	serverSecret = "server-wide-secret-0815"
)

// gateServer is `airlock serve`'s stack behind an httptest server: the
// real Docker sandbox with the pinned images, an in-process queue and
// worker, a keys file (alice: secrets_file and timeout_seconds=20; bob:
// no policy) and a --secrets-file.
type gateServer struct {
	url        string
	logs       *lockedBuffer
	alice, bob *client.Client
}

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newGateServer builds the server; everything closes with the test.
func newGateServer(t *testing.T) *gateServer {
	t.Helper()
	requireSandbox(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("alice.secrets", aliceSecret+"\n")
	ks, err := keys.Load(write("keys", "alice:"+aliceKey+" secrets_file=alice.secrets timeout_seconds=20\nbob:"+bobKey+"\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sf := stackFlags{concurrency: 2, secretsFile: write("server.secrets", serverSecret+"\n"), keys: ks}
	sf.python, sf.shell = envOr("AIRLOCK_PYTHON_IMAGE", "airlock/python:latest"), envOr("AIRLOCK_SHELL_IMAGE", "airlock/shell:latest")
	if err := sf.loadSecrets(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()
	st, err := buildStack(ctx, &sf, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.close)
	mcpSrv, err := mcpserver.New(mcpserver.Config{}, mcpserver.Deps{Dispatcher: st.disp, Executor: st.client, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeWithin(mcpSrv.Close) })
	cfg := api.DefaultConfig()
	cfg.Keys = ks
	srv, err := api.New(cfg, api.Deps{Dispatcher: apiDispatcher{st.disp}, Sessions: apiSessions{Client: st.client}, MCP: mcpSrv, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	g := &gateServer{url: hs.URL, logs: logs}
	for who, key := range map[**client.Client]string{&g.alice: aliceKey, &g.bob: bobKey} {
		if *who, err = client.New(hs.URL, client.WithAPIKey(key)); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

// call runs tc (in session sid when not empty) and fails the test on an
// API error.
func call(t *testing.T, c *client.Client, sid string, tc client.ToolCall) wire.ToolResult {
	t.Helper()
	return callMessage(t, c, sid, tc).Result
}

// callMessage is call returning the whole answer, the tool message too.
func callMessage(t *testing.T, c *client.Client, sid string, tc client.ToolCall) *wire.ToolCallResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	var res *wire.ToolCallResponse
	var err error
	if sid == "" {
		res, err = c.CallTool(ctx, tc)
	} else {
		res, err = c.CallSessionTool(ctx, sid, tc)
	}
	if err != nil {
		t.Fatalf("%s: %v", tc.Name, err)
	}
	return res
}

// openSession opens a session of c, closed with the test.
func openSession(t *testing.T, c *client.Client, limits *wire.Limits) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	s, err := c.CreateSession(ctx, limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteSession(context.Background(), s.ID) })
	return s.ID
}

// TestGateEndToEnd drives the gate's fixes of issue 26 through the real
// dispatcher, sandbox and HTTP API: per-call env and stdin, the timeout
// ceiling and defaults, and per-key secrets.
func TestGateEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	g := newGateServer(t)
	t.Run("EnvAndStdin", func(t *testing.T) { testEnvAndStdin(t, g) })
	t.Run("EnvAndStdinOverMCP", func(t *testing.T) { testEnvOverMCP(t, g) })
	t.Run("TimeoutCeiling", func(t *testing.T) { testTimeoutCeiling(t, g) })
	t.Run("TimeoutDefaults", func(t *testing.T) { testTimeoutDefaults(t, g) })
	t.Run("KeySecrets", func(t *testing.T) { testKeySecrets(t, g) })
}

// testEnvAndStdin: env and stdin round-trip in both tools, one-shot and
// in a session, and are absent from the next call.
func testEnvAndStdin(t *testing.T, g *gateServer) {
	opts := client.CodeOptions{Env: map[string]string{"MY_VAR": "v1", "OTHER_VAR": "two words"}, Stdin: "line 1\nline 2\n"}
	py := "import os, sys\nprint(os.environ.get('MY_VAR'), os.environ.get('OTHER_VAR'), repr(sys.stdin.read()))"
	sh := `echo "[${MY_VAR-unset}] [${OTHER_VAR-unset}]"; cat`
	for _, sid := range []string{"", openSession(t, g.bob, nil)} {
		kind := map[bool]string{true: "one-shot", false: "session"}[sid == ""]
		for _, c := range []struct {
			call       func(string, client.CodeOptions) client.ToolCall
			code       string
			with, none string
		}{
			{client.PythonCall, py, "v1 two words 'line 1\\nline 2\\n'\n", "None None ''\n"},
			{client.ShellCall, sh, "[v1] [two words]\nline 1\nline 2\n", "[unset] [unset]\n"},
		} {
			r := call(t, g.bob, sid, c.call(c.code, opts))
			if r.Status != "ok" || r.Stdout != c.with {
				t.Errorf("%s %s with env and stdin: %s %q %q", kind, r.Name, r.Status, r.Stdout, r.Stderr)
			}
			r = call(t, g.bob, sid, c.call(c.code, client.CodeOptions{}))
			if r.Status != "ok" || r.Stdout != c.none {
				t.Errorf("%s %s: the next call still sees env or stdin: %s %q %q", kind, r.Name, r.Status, r.Stdout, r.Stderr)
			}
		}
	}
	for _, name := range []string{"PATH", "HOME", "AIRLOCK_WORKER", "PYTHONPATH", "LD_PRELOAD"} {
		res := callMessage(t, g.bob, "", client.ShellCall("echo hi", client.CodeOptions{Env: map[string]string{name: "/tmp"}}))
		if r := res.Result; r.Status != "rejected" || r.Reason != "invalid_arguments" || !strings.Contains(res.Message.Content, "env "+name+": refused") {
			t.Errorf("env %s: %s %s %q", name, r.Status, r.Reason, res.Message.Content)
		}
	}
}

// testEnvOverMCP: the MCP tools carry env and stdin too (their schemas
// are the registry's), here in the MCP server's session.
func testEnvOverMCP(t *testing.T, g *gateServer) {
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "gate-test"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: g.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{bobKey}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range lt.Tools {
		if tl.Name == "run_python" {
			if b, _ := json.Marshal(tl.InputSchema); !strings.Contains(string(b), `"env"`) || !strings.Contains(string(b), `"stdin"`) {
				t.Errorf("MCP run_python schema without env and stdin: %s", b)
			}
		}
	}
	text := func(args map[string]any) string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_shell", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				sb.WriteString(tc.Text)
			}
		}
		return sb.String()
	}
	if out := text(map[string]any{"command": `echo "[$MCP_VAR]"; cat`, "env": map[string]string{"MCP_VAR": "from-mcp"}, "stdin": "piped"}); !strings.Contains(out, "[from-mcp]") || !strings.Contains(out, "piped") {
		t.Errorf("MCP call with env and stdin: %q", out)
	}
	if out := text(map[string]any{"command": `echo "[${MCP_VAR-unset}]"`}); !strings.Contains(out, "[unset]") {
		t.Errorf("MCP: the next call still sees env: %q", out)
	}
}

// bearer adds an API key to every request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// testTimeoutCeiling: the tool argument timeout_seconds cannot raise the
// timeout past the key's ceiling (in a session, the session's own limit):
// 400 naming it, like limits, and nothing runs; a key whose policy grants
// more may use it; absurd values are refused.
func testTimeoutCeiling(t *testing.T, g *gateServer) {
	bad := func(c *client.Client, sid string, tc client.ToolCall, want ...string) {
		t.Helper()
		// A hang guard per call: one for the whole sequence (a session
		// opened and a call run between the refusals) ran out before the
		// last refusal was sent on a loaded machine.
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
		defer cancel()
		start := time.Now()
		var err error
		if sid == "" {
			_, err = c.CallTool(ctx, tc)
		} else {
			_, err = c.CallSessionTool(ctx, sid, tc)
		}
		var ae *client.APIError
		if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest {
			t.Fatalf("%v: %v, want a 400 (it took %s)", tc.Arguments, err, time.Since(start))
		}
		for _, w := range want {
			if !strings.Contains(ae.Message, w) {
				t.Errorf("%v: message %q lacks %q", tc.Arguments, ae.Message, w)
			}
		}
	}
	sleep := "import time\ntime.sleep(32)\nprint('ran')"
	bad(g.bob, "", client.PythonCall(sleep, client.CodeOptions{TimeoutSeconds: 300}), "timeout_seconds 300 is over 10", "ceiling")
	bad(g.bob, "", client.ShellCall("sleep 32", client.CodeOptions{TimeoutSeconds: 11}), "timeout_seconds 11 is over 10")
	// In a session the bound is the session's own per-call limit (the
	// session call timeout, 2 min, for one opened without limits), not
	// the key's one-shot ceiling.
	bad(g.bob, openSession(t, g.bob, nil), client.ShellCall("sleep 32", client.CodeOptions{TimeoutSeconds: 200}), "timeout_seconds 200 is over 120")
	bad(g.bob, "", client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": "1"}, Limits: &wire.Limits{TimeoutSeconds: 9.3e9}}, "timeout_seconds", "is over 10")
	bad(g.alice, "", client.PythonCall(sleep, client.CodeOptions{TimeoutSeconds: 21}), "is over 20")
	if r := call(t, g.alice, "", client.PythonCall("print('granted')", client.CodeOptions{TimeoutSeconds: 20})); r.Status != "ok" {
		t.Errorf("alice's granted 20 s: %s %q", r.Status, r.Message)
	}
	// Past the schema's maximum too, the tool argument is refused with
	// the same 400 naming the key's ceiling.
	bad(g.bob, "", client.ToolCall{Name: "run_python", Arguments: json.RawMessage(`{"code": "1", "timeout_seconds": 9.3e9}`)}, "timeout_seconds 9.3e+09 is over 10")
}

// testTimeoutDefaults: without timeout_seconds a one-shot call gets the
// server default (10 s, as documented; it was 30 s) and a session call its
// session's own limit (it was 30 s too).
func testTimeoutDefaults(t *testing.T, g *gateServer) {
	r := call(t, g.bob, "", client.PythonCall("import time\ntime.sleep(11)\nprint('ran')", client.CodeOptions{}))
	if r.Status != "timeout" || !strings.Contains(r.Message, "10000 ms") {
		t.Errorf("one-shot default: %s %q %q", r.Status, r.Stdout, r.Message)
	}
	sid := openSession(t, g.bob, &wire.Limits{TimeoutSeconds: 2})
	r = call(t, g.bob, sid, client.PythonCall("import time\ntime.sleep(6)\nprint('ran')", client.CodeOptions{}))
	if r.Status != "timeout" || !strings.Contains(r.Message, "2000 ms") {
		t.Errorf("session default: %s %q %q", r.Status, r.Stdout, r.Message)
	}
	if r = call(t, g.bob, sid, client.PythonCall("import time\ntime.sleep(3)\nprint('ran')", client.CodeOptions{TimeoutSeconds: 8})); r.Status != "ok" {
		t.Errorf("session call raising its timeout within the ceiling: %s %q", r.Status, r.Message)
	}
}

// testKeySecrets: a configured secret printed by the code comes back as
// [REDACTED]: the key's own (secrets_file) in its own results only, the
// server's (--secrets-file) in everyone's; no log holds either.
func testKeySecrets(t *testing.T, g *gateServer) {
	code := "print('a=" + aliceSecret + " s=" + serverSecret + "')"
	for _, sid := range []string{"", openSession(t, g.alice, nil)} {
		r := call(t, g.alice, sid, client.PythonCall(code, client.CodeOptions{}))
		if r.Stdout != "a=[REDACTED] s=[REDACTED]\n" {
			t.Errorf("alice's own result (session %q): %q", sid, r.Stdout)
		}
	}
	r := call(t, g.bob, "", client.PythonCall(code, client.CodeOptions{}))
	if r.Stdout != "a="+aliceSecret+" s=[REDACTED]\n" {
		t.Errorf("bob's result: %q (alice's secret must not be a target for him, the server's must)", r.Stdout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	st, err := g.alice.CallToolStream(ctx, client.ShellCall("echo "+aliceSecret, client.CodeOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	var streamed strings.Builder
	for ev, err := st.Next(); err == nil; ev, err = st.Next() {
		streamed.WriteString(ev.Text)
	}
	if res, err := st.Result(); err != nil || strings.Contains(streamed.String(), aliceSecret) || res.Result.Stdout != "[REDACTED]\n" {
		t.Errorf("alice's streamed call: %q %v", streamed.String(), err)
	}
	if logs := g.logs.String(); strings.Contains(logs, aliceSecret) || strings.Contains(logs, serverSecret) {
		t.Errorf("a secret in the server's log")
	}
}
