package mcpserver

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/environments"
)

// fakeEnvs resolves geo and lint to images; anything else is unknown.
type fakeEnvs struct{}

func (fakeEnvs) Resolve(_ context.Context, name string, may func(string) bool) (environments.Target, error) {
	if environments.Builtin(name) {
		return environments.Target{Name: name, Base: name}, nil
	}
	if name != "geo" && name != "lint" {
		return environments.Target{}, core.Errorf("environments", core.ErrNotFound, "environment "+name+" not found")
	}
	if !may(name) {
		return environments.Target{}, core.Errorf("environments", core.ErrForbidden, "environment "+name+" is not allowed")
	}
	return environments.Target{Name: name, Base: "python", Image: "airlock/env-" + name + ":0123456789abcdef", Hash: "0123456789abcdef"}, nil
}

// envServer is a Server with cfg over a real dispatcher resolving fakeEnvs.
func envServer(t *testing.T, cfg Config) (*Server, *fakeExec) {
	t.Helper()
	fe := newFakeExec()
	dcfg := dispatcher.DefaultConfig()
	dcfg.Environments = fakeEnvs{}
	srv := startServer(t, cfg, Deps{Dispatcher: dispatcher.New(dcfg, fe, nil), Executor: fe, Environments: fakeEnvs{}})
	return srv, fe
}

// execs returns the exec requests (not session opens or closes) fe got.
func execs(fe *fakeExec) []core.Request {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	var out []core.Request
	for _, r := range fe.reqs {
		if r.Op == "" || r.Op == core.OpExec {
			out = append(out, r)
		}
	}
	return out
}

// opens counts the sessions fe opened.
func opens(fe *fakeExec) int {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	n := 0
	for _, r := range fe.reqs {
		if r.Op == core.OpSessionOpen {
			n++
		}
	}
	return n
}

// sessionOpens returns the environments of the sessions fe opened.
func sessionOpens(fe *fakeExec) []string {
	fe.mu.Lock()
	defer fe.mu.Unlock()
	var out []string
	for _, r := range fe.reqs {
		if r.Op == core.OpSessionOpen {
			out = append(out, r.Environment+" "+r.Image)
		}
	}
	return out
}

// TestSessionEnvironmentLocal: `airlock mcp --environment geo`
// (Config.Environment) opens the MCP session's sandbox session in geo, so
// every call runs there with its state, unless the call's environment
// argument names another (that one runs one-shot in it); an environment
// the server does not know fails the call naming it.
func TestSessionEnvironmentLocal(t *testing.T) {
	srv, fe := envServer(t, Config{Environment: "geo"})
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := srv.MCPServer("local").Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call(t, cs, "run_python", map[string]any{"code": "print(1)"})
	call(t, cs, "run_python", map[string]any{"code": "print(2)"})
	call(t, cs, "run_python", map[string]any{"code": "print(3)", "environment": "lint"})
	if got := fmt.Sprint(sessionOpens(fe)); got != "[geo airlock/env-geo:0123456789abcdef]" {
		t.Fatalf("sessions opened: %s, want one in geo", got)
	}
	reqs := execs(fe)
	if len(reqs) != 3 {
		t.Fatalf("%d calls ran, want 3", len(reqs))
	}
	if reqs[0].SessionID == "" || reqs[1].SessionID != reqs[0].SessionID {
		t.Fatalf("the calls without an argument ran in sessions %q and %q, want the MCP session's", reqs[0].SessionID, reqs[1].SessionID)
	}
	if r := reqs[2]; r.Environment != "lint" || r.Image != "airlock/env-lint:0123456789abcdef" || r.SessionID != "" {
		t.Fatalf("the call naming lint: environment %q image %q session %q, want lint one-shot", r.Environment, r.Image, r.SessionID)
	}

	srv2, _ := envServer(t, Config{Environment: "nope"})
	st2, ct2 := mcp.NewInMemoryTransports()
	if _, err := srv2.MCPServer("local").Connect(ctx, st2, nil); err != nil {
		t.Fatal(err)
	}
	cs2, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	res := call(t, cs2, "run_python", map[string]any{"code": "print(1)"})
	if !res.IsError || !strings.Contains(text(t, res), "nope not found") {
		t.Fatalf("an unknown session environment: %+v %q", res.IsError, text(t, res))
	}
}

// TestSessionEnvironmentHTTP: over the streamable HTTP transport (/mcp),
// the Airlock-Environment header of a session's requests opens its
// sandbox session in that environment; a session without it opens in the
// default one.
func TestSessionEnvironmentHTTP(t *testing.T) {
	srv, fe := envServer(t, Config{})
	ts := httptest.NewServer(srv.Handler("alice"))
	t.Cleanup(ts.Close)
	connect := func(env string) *mcp.ClientSession {
		hc := &http.Client{Transport: envRT{env}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "a"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	geo := connect("geo")
	call(t, geo, "run_python", map[string]any{"code": "print(1)"})
	call(t, geo, "run_python", map[string]any{"code": "print(2)", "environment": "python"})
	plain := connect("")
	call(t, plain, "run_python", map[string]any{"code": "print(3)"})
	if got := fmt.Sprint(sessionOpens(fe)); got != "[geo airlock/env-geo:0123456789abcdef  ]" {
		t.Fatalf("sessions opened: %q, want one in geo then a default one", got)
	}
	reqs := execs(fe)
	if len(reqs) != 3 {
		t.Fatalf("%d calls ran, want 3", len(reqs))
	}
	if reqs[0].SessionID == "" {
		t.Fatalf("the geo session's call ran one-shot")
	}
	if reqs[1].Environment != "python" || reqs[1].Image != "" || reqs[1].SessionID != "" {
		t.Fatalf("the call naming python: environment %q image %q session %q", reqs[1].Environment, reqs[1].Image, reqs[1].SessionID)
	}
	if reqs[2].SessionID == "" || reqs[2].SessionID == reqs[0].SessionID {
		t.Fatalf("the session without the header ran in %q", reqs[2].SessionID)
	}
}

// envRT sets the Airlock-Environment header on every request (none when empty).
type envRT struct{ env string }

func (e envRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if e.env != "" {
		r = r.Clone(r.Context())
		r.Header.Set(EnvironmentHeader, e.env)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
