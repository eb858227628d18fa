package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// mcpCall runs one tool call and fails the test on a protocol error.
func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// mcpText is the result's first (text) content.
func mcpText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatal("tool result without content")
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("first content is %T", res.Content[0])
	}
	return tc.Text
}

// mcpOK fails unless res succeeded, and returns its text.
func mcpOK(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", mcpText(t, res))
	}
	return mcpText(t, res)
}

// toolSchemas maps tool names to their JSON-decoded input schemas.
// mcpOnlyTools are MCP tools that are no dispatcher tool (the remote
// backend's session snapshot, fork and variables).
var mcpOnlyTools = map[string]bool{"snapshot_session": true, "fork_session": true, "list_variables": true}

func toolSchemas(t *testing.T, tools []*mcp.Tool) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, tl := range tools {
		if mcpOnlyTools[tl.Name] {
			continue
		}
		b, _ := json.Marshal(tl.InputSchema)
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		// MCP adds the environment argument to every tool's schema.
		props, _ := v["properties"].(map[string]any)
		if env, _ := props["environment"].(map[string]any); env["type"] != "string" {
			t.Errorf("%s: no environment argument in the MCP schema: %v", tl.Name, props["environment"])
		}
		delete(props, "environment")
		out[tl.Name] = v
	}
	return out
}

// exerciseMCP runs the checks shared by stdio and HTTP on one session.
func exerciseMCP(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	// State across calls.
	mcpOK(t, mcpCall(t, cs, "run_python", map[string]any{"code": "x = 41"}))
	if out := mcpOK(t, mcpCall(t, cs, "run_python", map[string]any{"code": "print(x + 1)"})); !strings.Contains(out, "42") {
		t.Fatalf("state across calls: %q", out)
	}
	// A plot as image content.
	res := mcpCall(t, cs, "run_python", map[string]any{"code": "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()"})
	mcpOK(t, res)
	var img *mcp.ImageContent
	for _, c := range res.Content {
		if ic, ok := c.(*mcp.ImageContent); ok {
			img = ic
		}
	}
	if img == nil || img.MIMEType != "image/png" || !strings.HasPrefix(string(img.Data), "\x89PNG") {
		t.Fatalf("no PNG image content in %d contents", len(res.Content))
	}
	// A file as a resource link, then read as a resource.
	res = mcpCall(t, cs, "run_python", map[string]any{"code": "import os\nos.makedirs('/work/outputs', exist_ok=True)\nopen('/work/outputs/r.csv', 'w').write('a,b\\n1,2\\n')"})
	mcpOK(t, res)
	var link *mcp.ResourceLink
	for _, c := range res.Content {
		if rl, ok := c.(*mcp.ResourceLink); ok {
			link = rl
		}
	}
	if link == nil || link.URI != "airlock://work/outputs/r.csv" {
		t.Fatalf("no resource link for outputs/r.csv: %+v", res.Content)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: link.URI})
	if err != nil || rr.Contents[0].Text != "a,b\n1,2\n" {
		t.Fatalf("read %s: %v %+v", link.URI, err, rr)
	}
	lr, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range lr.Resources {
		found = found || r.URI == link.URI
	}
	if !found {
		t.Fatalf("resources/list lacks %s: %d resources", link.URI, len(lr.Resources))
	}
	// A refused call and a failing one are tool errors.
	if res := mcpCall(t, cs, "execute_shell", map[string]any{"command": "rm -rf /"}); !res.IsError || !strings.Contains(mcpText(t, res), "policy") {
		t.Fatalf("refused call: isError=%v %q", res.IsError, mcpText(t, res))
	}
	if res := mcpCall(t, cs, "run_python", map[string]any{"code": "1/0"}); !res.IsError || !strings.Contains(mcpText(t, res), "ZeroDivisionError") {
		t.Fatalf("failing code: isError=%v %q", res.IsError, mcpText(t, res))
	}
	// Bad arguments: a tool error naming the field; unknown tool: JSON-RPC -32602.
	if res := mcpCall(t, cs, "run_python", map[string]any{"source": "1"}); !res.IsError || !strings.Contains(mcpText(t, res), "code") {
		t.Fatalf("bad arguments: isError=%v %q", res.IsError, mcpText(t, res))
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "launch_rockets", Arguments: map[string]any{}})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("unknown tool: %v, want JSON-RPC -32602", err)
	}
	// Cancellation mid-call interrupts the code and keeps the session.
	cctx, ccancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "import time\nprint('start', flush=True)\ntime.sleep(120)"}})
		errc <- err
	}()
	time.Sleep(3 * time.Second)
	ccancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call: %v", err)
		}
	case <-time.After(testscale.D(30 * time.Second)):
		t.Fatal("cancelled call did not return")
	}
	// The MCP session stays usable and the sandbox session kept its state:
	// a cancellation is an interrupt, never the session's end.
	out := mcpOK(t, mcpCall(t, cs, "run_python", map[string]any{"code": "print('alive', globals().get('x'))"}))
	if !strings.Contains(out, "alive 41") {
		t.Fatalf("after cancel the session lost its state: %q", out)
	}
}

func TestMCPStdio(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("mounted-ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(airlockBin, "mcp", "--mount", dir)
	cmd.Env = childEnv()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to airlock mcp: %v\n%s", err, stderr.String())
	}
	defer func() {
		_ = cs.Close()
		if t.Failed() {
			t.Logf("airlock mcp stderr:\n%s", tail(stderr.String(), 6000))
		}
	}()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{}
	for _, s := range registryWithFetch(t).Specs() {
		b, _ := json.Marshal(s.Parameters)
		var v any
		_ = json.Unmarshal(b, &v)
		want[s.Name] = v
	}
	if got := toolSchemas(t, lt.Tools); !reflect.DeepEqual(got, want) {
		t.Fatalf("MCP tool schemas differ from the registry:\n got %v\nwant %v", got, want)
	}
	if out := mcpOK(t, mcpCall(t, cs, "run_python", map[string]any{"code": "print(open('/workspace/in.txt').read())"})); !strings.Contains(out, "mounted-ok") {
		t.Fatalf("--mount: %q", out)
	}
	exerciseMCP(t, cs)
}

// startKeyed starts `airlock serve` with API keys (no insecure-local).
func startKeyed(t *testing.T, keys ...string) *server {
	t.Helper()
	f := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(f, []byte(strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	p := startProc(t, "airlock serve", "serve", "--addr", addr, "--keys-file", f)
	s := &server{proc: p, URL: "http://" + addr}
	poll(t, startTimeout, "airlock serve to answer /healthz", func() bool { return p.exited() || healthy(s.URL) })
	if p.exited() {
		t.Fatalf("airlock serve exited early:\n%s", tail(p.stderr.String(), 4000))
	}
	return s
}

// bearerRT adds a Bearer key to every request.
type bearerRT struct{ key string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

func TestMCPStreamableHTTP(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	const keyA, keyB = "alice:key-alice-0123456789abcdef", "bob:key-bob-0123456789abcdef00"
	srv := startKeyed(t, keyA, keyB)
	a, b := strings.SplitN(keyA, ":", 2)[1], strings.SplitN(keyB, ":", 2)[1]
	// Without a key: 401 like the REST API.
	resp, err := http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/mcp without a key: HTTP %d, want 401", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearerRT{a}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rest := do(t, http.MethodGet, srv.URL+"/v1/tools", nil, "Authorization", "Bearer "+a).must(t, http.StatusOK).JSON(t)
	want := map[string]any{}
	for _, x := range rest["tools"].([]any) {
		fn := x.(map[string]any)["function"].(map[string]any)
		want[fn["name"].(string)] = fn["parameters"]
	}
	if got := toolSchemas(t, lt.Tools); !reflect.DeepEqual(got, want) {
		t.Fatalf("MCP tool schemas differ from /v1/tools:\n got %v\nwant %v", got, want)
	}
	exerciseMCP(t, cs)

	// Key B presenting key A's MCP session id reaches nothing.
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(x)"}}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
	req.Header.Set("Authorization", "Bearer "+b)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("key B with key A's MCP session: HTTP %d, want 404", resp.StatusCode)
	}
	// Key B's own session does not see A's state.
	csB, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-b"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearerRT{b}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer csB.Close()
	if res := mcpCall(t, csB, "run_python", map[string]any{"code": "print(x)"}); !res.IsError || !strings.Contains(mcpText(t, res), "NameError") {
		t.Fatalf("key B sees key A's state: isError=%v %q", res.IsError, mcpText(t, res))
	}
}

// registryWithFetch is the registry of a dispatcher that can fetch, as the
// local commands' is (fetch_url is listed; it refuses calls without a
// network policy).
func registryWithFetch(t *testing.T) *dispatcher.Registry {
	t.Helper()
	g, err := egress.NewGuard(nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := egress.NewFetcher(egress.FetchConfig{Guard: g})
	if err != nil {
		t.Fatal(err)
	}
	cfg := dispatcher.DefaultConfig()
	cfg.Fetcher = f
	return dispatcher.New(cfg, nil, nil).Registry()
}
