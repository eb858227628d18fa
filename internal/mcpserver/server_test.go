package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/airlock-dev/airlock/internal/testscale"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/dispatcher"
)

// harness is a Server over a real dispatcher and a fake executor.
type harness struct {
	srv  *Server
	exec *fakeExec
	disp *dispatcher.Dispatcher
}

// startServer makes a Server of cfg and deps, closed when t ends.
func startServer(t *testing.T, cfg Config, deps Deps) *Server {
	t.Helper()
	srv, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
		defer cancel()
		_ = srv.Close(ctx)
	})
	return srv
}

func newHarness(t *testing.T, mod func(*dispatcher.Config)) *harness {
	t.Helper()
	fe := newFakeExec()
	dcfg := dispatcher.DefaultConfig()
	if mod != nil {
		mod(&dcfg)
	}
	d := dispatcher.New(dcfg, fe, nil)
	srv := startServer(t, Config{ProgressInterval: 20 * time.Millisecond}, Deps{Dispatcher: d, Executor: fe})
	return &harness{srv: srv, exec: fe, disp: d}
}

// connect runs owner's server on an in-memory transport and returns a
// connected client session.
func (h *harness) connect(t *testing.T, owner string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := h.srv.MCPServer(owner).Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool %s: %v", name, err)
	}
	return res
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatal("no content")
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("first content is %T, want text", res.Content[0])
	}
	return tc.Text
}

func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structuredContent is not an object: %s", b)
	}
	return m
}

func TestToolsComeFromTheRegistry(t *testing.T) {
	h := newHarness(t, nil)
	cs := h.connect(t, "alice", nil)
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	specs := h.disp.Registry().Specs()
	if len(lt.Tools) != len(specs) {
		t.Fatalf("%d tools, want %d", len(lt.Tools), len(specs))
	}
	byName := map[string]*mcp.Tool{}
	for _, tl := range lt.Tools {
		byName[tl.Name] = tl
	}
	for _, sp := range specs {
		tl, ok := byName[sp.Name]
		if !ok {
			t.Fatalf("tool %s missing", sp.Name)
		}
		if tl.Description != sp.Description {
			t.Errorf("%s: description differs", sp.Name)
		}
		// The MCP schema is the registry's plus the environment argument.
		if d := cmp.Diff(roundTrip(t, withEnvironment(sp.Parameters)), roundTrip(t, tl.InputSchema)); d != "" {
			t.Errorf("%s: input schema differs (-registry +mcp):\n%s", sp.Name, d)
		}
		out, _ := tl.OutputSchema.(map[string]any)
		if out["type"] != "object" || out["properties"].(map[string]any)["status"] == nil {
			t.Errorf("%s: output schema %v lacks the result's status", sp.Name, tl.OutputSchema)
		}
	}
}

func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCallsShareOneLazySessionClosedWithTheMCPSession(t *testing.T) {
	h := newHarness(t, nil)
	cs := h.connect(t, "alice", nil)
	if got := h.exec.sessionsUsed(); len(got) != 0 {
		t.Fatalf("sessions before any call: %v", got)
	}
	for range 2 {
		res := call(t, cs, "run_python", map[string]any{"code": "print(1)"})
		if res.IsError || !strings.Contains(text(t, res), "1") {
			t.Fatalf("run_python: isError=%v %q", res.IsError, text(t, res))
		}
		if st := structured(t, res); st["status"] != "ok" || st["stdout"] != "1\n" {
			t.Fatalf("structured content %v", st)
		}
	}
	used := h.exec.sessionsUsed()
	if len(used) != 1 {
		t.Fatalf("calls ran in sessions %v, want one", used)
	}
	// A second MCP session gets its own Airlock session.
	cs2 := h.connect(t, "alice", nil)
	call(t, cs2, "run_python", map[string]any{"code": "print(1)"})
	if used2 := h.exec.sessionsUsed(); len(used2) != 2 {
		t.Fatalf("two MCP sessions used %v", used2)
	}
	_ = cs.Close()
	waitFor(t, "the first session closed", func() bool {
		c := h.exec.closedSessions()
		return len(c) == 1 && c[0] == used[0]
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testscale.D(10 * time.Second))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestArtifactsBecomeImagesAndResourceLinks(t *testing.T) {
	h := newHarness(t, nil)
	cs := h.connect(t, "alice", nil)
	res := call(t, cs, "run_python", map[string]any{"code": "plot()"})
	if res.IsError || len(res.Content) != 3 {
		t.Fatalf("isError=%v content=%d", res.IsError, len(res.Content))
	}
	img, ok := res.Content[1].(*mcp.ImageContent)
	if !ok || img.MIMEType != "image/png" || string(img.Data) != string(pngBytes) {
		t.Fatalf("content[1] = %#v, want the PNG", res.Content[1])
	}
	link, ok := res.Content[2].(*mcp.ResourceLink)
	if !ok || link.URI != "airlock://work/outputs/a.csv" {
		t.Fatalf("content[2] = %#v, want a resource link", res.Content[2])
	}
	rr, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: link.URI})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Contents[0].Text != "x,y\n1,2\n" {
		t.Fatalf("read %q", rr.Contents[0].Text)
	}
	// Structured content keeps the artifact's metadata, not its bytes.
	arts := structured(t, res)["artifacts"].([]any)
	if a := arts[0].(map[string]any); a["name"] != "figure-1.png" || a["data"] != nil {
		t.Fatalf("structured artifact %v", a)
	}
}

func TestResourcesListTheSessionFiles(t *testing.T) {
	h := newHarness(t, nil)
	cs := h.connect(t, "alice", nil)
	lr, err := cs.ListResources(context.Background(), nil)
	if err != nil || len(lr.Resources) != 0 {
		t.Fatalf("before a call: %v %v", lr, err)
	}
	call(t, cs, "run_python", map[string]any{"code": "print(1)"})
	lr, err = cs.ListResources(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lr.Resources) != 1 || lr.Resources[0].URI != "airlock://work/outputs/a.csv" || lr.Resources[0].Size != 8 {
		t.Fatalf("resources %+v", lr.Resources)
	}
	tpl, err := cs.ListResourceTemplates(context.Background(), nil)
	if err != nil || len(tpl.ResourceTemplates) != 1 || tpl.ResourceTemplates[0].URITemplate != workTemplate {
		t.Fatalf("templates %v %v", tpl, err)
	}
	_, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "airlock://work/missing.txt"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("missing file: %v, want resource-not-found (-32602)", err)
	}
}

func TestErrorsRefusalsUnknownToolsAndBadArguments(t *testing.T) {
	h := newHarness(t, nil)
	cs := h.connect(t, "alice", nil)
	res := call(t, cs, "run_python", map[string]any{"code": "boom"})
	if !res.IsError || structured(t, res)["status"] != "error" {
		t.Fatalf("failed code: isError=%v %v", res.IsError, structured(t, res))
	}
	res = call(t, cs, "execute_shell", map[string]any{"command": "rm -rf /"})
	if !res.IsError || structured(t, res)["status"] != "rejected" || !strings.Contains(text(t, res), "policy") {
		t.Fatalf("policy refusal: isError=%v %q", res.IsError, text(t, res))
	}
	// Bad arguments are a tool error the model can fix (spec: input validation errors).
	res = call(t, cs, "run_python", map[string]any{"cod": "print(1)"})
	if !res.IsError || structured(t, res)["reason"] != "invalid_arguments" || !strings.Contains(text(t, res), "code") {
		t.Fatalf("bad arguments: isError=%v %q", res.IsError, text(t, res))
	}
	// An unknown tool is a protocol error.
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, "no_such_tool") {
		t.Fatalf("unknown tool: %v, want JSON-RPC -32602", err)
	}
}

func TestApprovalByElicitation(t *testing.T) {
	h := newHarness(t, func(c *dispatcher.Config) { c.ApprovalTools = []string{"run_python"} })
	var answer atomic.Value
	var asked atomic.Int32
	answer.Store(true)
	withElicit := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		if !strings.Contains(req.Params.Message, "run_python") {
			t.Errorf("elicitation message %q does not name the tool", req.Params.Message)
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": answer.Load().(bool)}}, nil
	}}
	cs := h.connect(t, "alice", withElicit)
	res := call(t, cs, "run_python", map[string]any{"code": "print(1)"})
	if res.IsError || structured(t, res)["status"] != "ok" || asked.Load() != 1 {
		t.Fatalf("approved: isError=%v %q asked=%d", res.IsError, text(t, res), asked.Load())
	}
	answer.Store(false)
	res = call(t, cs, "run_python", map[string]any{"code": "print(1)"})
	if !res.IsError || structured(t, res)["status"] != "rejected" || !strings.Contains(text(t, res), "refused") {
		t.Fatalf("declined: isError=%v %q", res.IsError, text(t, res))
	}
	// Without elicitation the call is refused with a clear message.
	plain := h.connect(t, "alice", nil)
	before := len(h.exec.sessionsUsed())
	res = call(t, plain, "run_python", map[string]any{"code": "print(1)"})
	if !res.IsError || !strings.Contains(text(t, res), "does not support elicitation") {
		t.Fatalf("no elicitation: isError=%v %q", res.IsError, text(t, res))
	}
	if after := len(h.exec.sessionsUsed()); after != before {
		t.Fatalf("a refused call ran: sessions used %d -> %d", before, after)
	}
}

func TestCancellationInterruptsTheCallAndKeepsTheSession(t *testing.T) {
	h := newHarness(t, nil)
	var progress atomic.Int32
	cs := h.connect(t, "alice", &mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
		progress.Add(1)
	}})
	call(t, cs, "run_python", map[string]any{"code": "print(1)"})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "sleep()"}}
		p.SetProgressToken("tok")
		_, err := cs.CallTool(ctx, p)
		errc <- err
	}()
	<-h.exec.started
	waitFor(t, "two progress notifications", func() bool { return progress.Load() >= 2 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	select {
	case err := <-h.exec.stopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("executor ctx ended with %v", err)
		}
	case <-time.After(testscale.D(10 * time.Second)):
		t.Fatal("the executor call was not cancelled")
	}
	res := call(t, cs, "run_python", map[string]any{"code": "print(1)"})
	if res.IsError {
		t.Fatalf("after cancel: %q", text(t, res))
	}
	if used := h.exec.sessionsUsed(); len(used) != 1 || len(h.exec.closedSessions()) != 0 {
		t.Fatalf("sessions used %v closed %v, want one kept", used, h.exec.closedSessions())
	}
}

func TestHTTPOwnersAreIsolated(t *testing.T) {
	h := newHarness(t, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.srv.Handler(r.Header.Get("X-Owner")).ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	client := func(owner string) *http.Client {
		return &http.Client{Transport: headerRT{owner}}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "a"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: client("alice"), DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call(t, cs, "run_python", map[string]any{"code": "print(1)"})
	// Bob presents alice's session id: his handler does not know it.
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(2)"}}}`
	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
	resp, err := client("bob").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("bob with alice's session id: HTTP %d, want 404", resp.StatusCode)
	}
	if n := len(h.exec.sessionsUsed()); n != 1 {
		t.Fatalf("%d sessions ran code, want alice's only", n)
	}
}

// headerRT sets X-Owner on every request.
type headerRT struct{ owner string }

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Owner", h.owner)
	return http.DefaultTransport.RoundTrip(r)
}

func TestApprovalOverHTTPUsesLegacyElicitation(t *testing.T) {
	h := newHarness(t, func(c *dispatcher.Config) { c.ApprovalTools = []string{"run_python"} })
	ts := httptest.NewServer(h.srv.Handler("alice"))
	t.Cleanup(ts.Close)
	var asked atomic.Int32
	c := mcp.NewClient(&mcp.Implementation{Name: "a"}, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res := call(t, cs, "run_python", map[string]any{"code": "print(1)"})
	if res.IsError || asked.Load() != 1 {
		t.Fatalf("protocol %s: isError=%v %q asked=%d", cs.InitializeResult().ProtocolVersion, res.IsError, text(t, res), asked.Load())
	}
}

func TestForgedApprovalStateIsRefused(t *testing.T) {
	h := newHarness(t, func(c *dispatcher.Config) { c.ApprovalTools = []string{"run_python"} })
	cs := h.connect(t, "alice", &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, errors.New("unused") }})
	res := call(t, cs, "run_python", map[string]any{"code": "print(1)"})
	if !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("want an input-required result, got %+v", res)
	}
	other := h.connect(t, "alice", nil)
	ctx := context.Background()
	p := &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "print(1)"}}
	p.RequestState = res.RequestState
	p.InputResponses = mcp.InputResponseMap{approvalInput: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}
	got, err := other.CallTool(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if !got.IsError || !strings.Contains(text(t, got), "approval state") {
		t.Fatalf("another session replaying the token: isError=%v %q", got.IsError, text(t, got))
	}
}

func TestAnEndedSessionIsReplacedAndTheModelTold(t *testing.T) {
	h := newHarness(t, nil)
	cs := h.connect(t, "alice", nil)
	call(t, cs, "run_python", map[string]any{"code": "print(1)"})
	first := h.exec.sessionsUsed()[0]
	h.exec.mu.Lock()
	delete(h.exec.open, first)
	h.exec.mu.Unlock()
	res := call(t, cs, "run_python", map[string]any{"code": "print(1)"})
	if res.IsError || !strings.Contains(text(t, res), "previous sandbox session had ended") {
		t.Fatalf("after the session ended: isError=%v %q", res.IsError, text(t, res))
	}
	if used := h.exec.sessionsUsed(); len(used) != 2 {
		t.Fatalf("sessions used %v, want a second one", used)
	}
}
