package main

import (
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
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/environments/envtest"
	"github.com/airlock-dev/airlock/environments/envtest/envuse"
	"github.com/airlock-dev/airlock/internal/mcpserver"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// Keys of the environment tests: alice may use the test environment, bob
// only the built-in ones, root is an admin key.
const (
	envAliceKey = "alice-env-key-0123456789ab"
	envBobKey   = "bob-env-key-0123456789abcd"
	envRootKey  = "root-env-key-0123456789abc"
)

// envServer is serve's stack with the environments service on a memory
// state store holding the test environment (built once per test binary:
// a no-op when its image exists).
type envServer struct {
	url              string
	alice, bob, root *client.Client
	rec              environments.Record
}

var envUse struct {
	once sync.Once
	rec  environments.Record
	err  error
}

// newEnvServer builds the server; everything closes with the test.
func newEnvServer(t *testing.T) *envServer {
	t.Helper()
	requireSandbox(t)
	dc := envtest.Docker(t)
	store := state.NewMemory(nil)
	m := envuse.Manager(dc, store)
	envUse.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		dir, err := os.MkdirTemp("", "airlock-envuse-")
		if err != nil {
			envUse.err = err
			return
		}
		defer os.RemoveAll(dir)
		envUse.rec, envUse.err = envuse.BuildUse(ctx, m, dir, envuse.UseName)
	})
	if envUse.err != nil {
		t.Fatal(envUse.err)
	}
	// The record into this server's store (a no-op build does it too).
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()
	rec, err := envuse.BuildUse(ctx, m, t.TempDir(), envuse.UseName)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kf := filepath.Join(dir, "keys")
	if err := os.WriteFile(kf, []byte("alice:"+envAliceKey+" environments="+envuse.UseName+"\nbob:"+envBobKey+"\nroot:"+envRootKey+" admin=true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ks, err := keys.Load(kf, "")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	sf := stackFlags{concurrency: 2, keys: ks}
	sf.python, sf.shell = envOr("AIRLOCK_PYTHON_IMAGE", "airlock/python:latest"), envOr("AIRLOCK_SHELL_IMAGE", "airlock/shell:latest")
	sf.pool = 1
	st, err := buildStack(ctx, &sf, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.close)
	envs, err := st.environments(store, &sf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(envs.Close)
	mcpSrv, err := mcpserver.New(mcpserver.Config{Environments: keyEnvironments(ks, false)}, mcpserver.Deps{Dispatcher: st.disp, Executor: st.client, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeWithin(mcpSrv.Close) })
	cfg := api.DefaultConfig()
	cfg.Keys = ks
	srv, err := api.New(cfg, api.Deps{Dispatcher: apiDispatcher{st.disp}, Sessions: apiSessions{Client: st.client}, MCP: mcpSrv,
		State: store, Batches: store, Environments: envs, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	s := &envServer{url: hs.URL, rec: rec}
	for who, key := range map[**client.Client]string{&s.alice: envAliceKey, &s.bob: envBobKey, &s.root: envRootKey} {
		if *who, err = client.New(hs.URL, client.WithAPIKey(key)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// probe is the call that imports what the test environment adds.
func probe(env string) client.ToolCall {
	tc := client.PythonCall(envuse.UseProbe, client.CodeOptions{})
	tc.Environment = env
	return tc
}

// TestEnvironmentsInUse: a call, a session, a batch item and an MCP call
// run in the test environment (its Debian package, CLI and wheel import;
// the default environment still lacks them); a key not allowed it gets
// 403, an unknown one 404; only admin keys manage environments; the list
// shows it with its warm containers.
func TestEnvironmentsInUse(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	s := newEnvServer(t)
	env := envuse.UseName
	want := "toolz airlockuse 42\n"
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(5*time.Minute))
	defer cancel()

	t.Run("OneShot", func(t *testing.T) {
		if r := call(t, s.alice, "", probe(env)); r.Status != "ok" || r.Stdout != want {
			t.Fatalf("probe in %s: %s %q %q", env, r.Status, r.Stdout, r.Stderr)
		}
		tc := client.ShellCall("tree --version", client.CodeOptions{})
		tc.Environment = env
		if r := call(t, s.alice, "", tc); r.Status != "ok" || !strings.Contains(r.Stdout, "tree") {
			t.Errorf("tree in %s: %s %q %q", env, r.Status, r.Stdout, r.Stderr)
		}
		if r := call(t, s.alice, "", probe("")); r.Status != "error" || !strings.Contains(r.Stderr, "ModuleNotFoundError") {
			t.Errorf("the default environment has the test packages: %s %q %q", r.Status, r.Stdout, r.Stderr)
		}
		tc = client.ShellCall("command -v tree || echo none", client.CodeOptions{})
		if r := call(t, s.alice, "", tc); r.Stdout != "none\n" {
			t.Errorf("the shell environment has tree: %s %q", r.Status, r.Stdout)
		}
		// Warm: the second call reuses alice's container of the environment.
		if r := call(t, s.alice, "", probe(env)); r.Status != "ok" || r.Stdout != want {
			t.Errorf("second probe: %s %q %q", r.Status, r.Stdout, r.Stderr)
		}
	})
	t.Run("Refused", func(t *testing.T) {
		var ae *client.APIError
		_, err := s.bob.CallTool(ctx, probe(env))
		if !errors.As(err, &ae) || ae.StatusCode != http.StatusForbidden || !strings.Contains(ae.Message, env) {
			t.Errorf("bob in %s: %v", env, err)
		}
		_, err = s.alice.CallTool(ctx, probe("no-such-env"))
		if !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound || !strings.Contains(ae.Message, "no-such-env") {
			t.Errorf("unknown environment: %v", err)
		}
		_, err = s.bob.CreateSessionWith(ctx, wire.CreateSessionRequest{Environment: env})
		if !errors.As(err, &ae) || ae.StatusCode != http.StatusForbidden {
			t.Errorf("bob's session in %s: %v", env, err)
		}
		_, err = s.alice.CreateEnvironment(ctx, wire.CreateEnvironmentRequest{Spec: json.RawMessage(`{"name":"x-y"}`)})
		if !errors.As(err, &ae) || ae.StatusCode != http.StatusForbidden || ae.Code != core.ErrForbidden {
			t.Errorf("non-admin POST /v1/environments: %v", err)
		}
		if err := s.bob.DeleteEnvironment(ctx, env); !errors.As(err, &ae) || ae.StatusCode != http.StatusForbidden {
			t.Errorf("non-admin DELETE: %v", err)
		}
	})
	t.Run("Session", func(t *testing.T) {
		ses, err := s.alice.CreateSessionWith(ctx, wire.CreateSessionRequest{Environment: env})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.alice.DeleteSession(context.Background(), ses.ID) })
		if ses.Environment != env {
			t.Errorf("session answer names %q", ses.Environment)
		}
		if r := call(t, s.alice, ses.ID, client.PythonCall("import airlockuse\nx = airlockuse.answer()", client.CodeOptions{})); r.Status != "ok" {
			t.Fatalf("session import: %s %q", r.Status, r.Stderr)
		}
		if r := call(t, s.alice, ses.ID, client.PythonCall("import toolz; print(x)", client.CodeOptions{})); r.Status != "ok" || r.Stdout != "42\n" {
			t.Errorf("session state: %s %q %q", r.Status, r.Stdout, r.Stderr)
		}
	})
	t.Run("BatchItem", func(t *testing.T) {
		args, _ := json.Marshal(map[string]string{"code": envuse.UseProbe})
		jsonl := `{"custom_id":"in-env","tool_call":{"type":"function","environment":"` + env + `","function":{"name":"run_python","arguments":` + string(args) + `}}}` + "\n" +
			`{"custom_id":"default","tool_call":{"type":"function","function":{"name":"run_python","arguments":` + string(args) + `}}}` + "\n"
		b, err := s.alice.CreateBatch(ctx, []byte(jsonl), client.BatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for !b.Status.Terminal() {
			select {
			case <-ctx.Done():
				t.Fatalf("batch %s: %s", b.ID, b.Status)
			case <-time.After(200 * time.Millisecond):
			}
			if b, err = s.alice.GetBatch(ctx, b.ID); err != nil {
				t.Fatal(err)
			}
		}
		lines, err := s.alice.BatchLines(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]wire.BatchLine{}
		for _, l := range lines {
			got[l.CustomID] = l
		}
		if l := got["in-env"]; l.Status != "ok" || l.Stdout != want {
			t.Errorf("batch item in %s: %+v", env, l)
		}
		if l := got["default"]; l.Status != "error" {
			t.Errorf("batch item in the default environment: %+v", l)
		}
	})
	t.Run("MCP", func(t *testing.T) {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "env-test"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{envAliceKey}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": envuse.UseProbe, "environment": env}})
		if err != nil {
			t.Fatal(err)
		}
		text := ""
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		if res.IsError || !strings.Contains(text, "toolz airlockuse 42") {
			t.Errorf("MCP call in %s: error=%v %q", env, res.IsError, text)
		}
	})
	t.Run("List", func(t *testing.T) {
		list, err := s.bob.Environments(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var found *wire.Environment
		for i, e := range list.Environments {
			if e.Name == env {
				found = &list.Environments[i]
			}
		}
		if len(list.Environments) < 3 || list.Environments[0].Name != "python" || found == nil {
			t.Fatalf("list: %+v", list)
		}
		if found.Hash != s.rec.Hash || found.Status != "ready" || len(found.Packages) == 0 || found.SizeBytes == 0 || found.Warm < 1 {
			t.Errorf("listed: %+v", *found)
		}
	})
}
