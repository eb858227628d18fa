package e2e

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// remoteMCP is an `airlock mcp --server` subprocess and its client session.
type remoteMCP struct {
	cs     *mcp.ClientSession
	stderr *syncBuffer
}

// startRemoteMCP runs `airlock mcp --server url --key key` and connects
// the SDK's client to it over stdio. The key is passed in the environment
// when env is true (AIRLOCK_SERVER / AIRLOCK_API_KEY), as flags otherwise.
func startRemoteMCP(t *testing.T, url, key string, env bool) *remoteMCP {
	t.Helper()
	cmd := exec.Command(airlockBin, "mcp", "--server", url, "--key", key)
	cmd.Env = childEnv()
	if env {
		cmd = exec.Command(airlockBin, "mcp")
		cmd.Env = append(childEnv(), "AIRLOCK_SERVER="+url, "AIRLOCK_API_KEY="+key)
	}
	r := &remoteMCP{stderr: &syncBuffer{}}
	cmd.Stderr = r.stderr
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-remote"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to airlock mcp --server: %v\n%s", err, r.stderr.String())
	}
	r.cs = cs
	t.Cleanup(func() {
		_ = cs.Close()
		if t.Failed() {
			t.Logf("airlock mcp --server stderr:\n%s", tail(r.stderr.String(), 6000))
		}
	})
	return r
}

// sessionLog finds the remote session id the MCP server logged opening.
var sessionLog = regexp.MustCompile(`msg="mcp: session opened" owner=\S+ session=(\S+)`)

// remoteSession waits for the id of the remote Airlock session r opened.
func (r *remoteMCP) remoteSession(t *testing.T) string {
	t.Helper()
	var id string
	poll(t, testscale.D(10*time.Second), "the MCP server to log its remote session", func() bool {
		if m := sessionLog.FindStringSubmatch(r.stderr.String()); m != nil {
			id = m[1]
		}
		return id != ""
	})
	return id
}

func TestMCPRemoteStdio(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	const keyA, keyB = "alice:key-alice-0123456789abcdef", "bob:key-bob-0123456789abcdef00"
	srv := startKeyed(t, keyA, keyB)
	a, b := strings.SplitN(keyA, ":", 2)[1], strings.SplitN(keyB, ":", 2)[1]
	ma := startRemoteMCP(t, srv.URL, a, false)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()

	// The tools are the server's /v1/tools: names, descriptions, schemas.
	lt, err := ma.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rest := do(t, http.MethodGet, srv.URL+"/v1/tools", nil, "Authorization", "Bearer "+a).must(t, http.StatusOK).JSON(t)
	wantSchemas, wantDesc := map[string]any{}, map[string]string{}
	for _, x := range rest["tools"].([]any) {
		fn := x.(map[string]any)["function"].(map[string]any)
		wantSchemas[fn["name"].(string)] = fn["parameters"]
		wantDesc[fn["name"].(string)] = fn["description"].(string)
	}
	if len(wantSchemas) == 0 {
		t.Fatal("/v1/tools lists no tools")
	}
	if got := toolSchemas(t, lt.Tools); !reflect.DeepEqual(got, wantSchemas) {
		t.Fatalf("remote MCP tool schemas differ from /v1/tools:\n got %v\nwant %v", got, wantSchemas)
	}
	for _, tl := range lt.Tools {
		if mcpOnlyTools[tl.Name] {
			continue
		}
		if tl.Description != wantDesc[tl.Name] {
			t.Fatalf("tool %s: description %q, /v1/tools says %q", tl.Name, tl.Description, wantDesc[tl.Name])
		}
	}

	// Python runs on the server, and state persists across the MCP session's calls.
	if out := mcpOK(t, mcpCall(t, ma.cs, "run_python", map[string]any{"code": "x = 41\nprint('hello from remote')"})); !strings.Contains(out, "hello from remote") {
		t.Fatalf("run_python: %q", out)
	}
	if out := mcpOK(t, mcpCall(t, ma.cs, "run_python", map[string]any{"code": "print(x + 1)"})); !strings.Contains(out, "42") {
		t.Fatalf("state across calls: %q", out)
	}
	// A refused call is a tool error, not a protocol error.
	if res := mcpCall(t, ma.cs, "run_python", map[string]any{"code": 7}); !res.IsError {
		t.Fatalf("bad arguments: isError=false %q", mcpText(t, res))
	}
	// Files of the session are resources, read through the file routes.
	mcpOK(t, mcpCall(t, ma.cs, "run_python", map[string]any{"code": "open('/work/note.txt','w').write('remote-file')"}))
	rr, err := ma.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "airlock://work/note.txt"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "remote-file" {
		t.Fatalf("resource read: %v %+v", err, rr)
	}

	// A's remote session belongs to key A: B cannot reach it.
	sid := ma.remoteSession(t)
	do(t, http.MethodGet, srv.URL+"/v1/sessions/"+sid, nil, "Authorization", "Bearer "+a).must(t, http.StatusOK)
	do(t, http.MethodGet, srv.URL+"/v1/sessions/"+sid, nil, "Authorization", "Bearer "+b).must(t, http.StatusNotFound)
	call := toolCall("c1", "run_python", map[string]any{"code": "print(x)"})
	do(t, http.MethodPost, srv.URL+"/v1/sessions/"+sid+"/tool-calls", call, "Authorization", "Bearer "+b).must(t, http.StatusNotFound)
	// B's own MCP server (key from the environment) has its own state.
	mb := startRemoteMCP(t, srv.URL, b, true)
	if res := mcpCall(t, mb.cs, "run_python", map[string]any{"code": "print(x)"}); !res.IsError || !strings.Contains(mcpText(t, res), "NameError") {
		t.Fatalf("key B sees key A's state: isError=%v %q", res.IsError, mcpText(t, res))
	}

	// A wrong key: the server still starts, and calls say what is wrong.
	mw := startRemoteMCP(t, srv.URL, "not-a-key-0123456789abcdef", false)
	res := mcpCall(t, mw.cs, "run_python", map[string]any{"code": "print(1)"})
	if txt := mcpText(t, res); !res.IsError || !strings.Contains(txt, "401") || !strings.Contains(txt, "--key") {
		t.Fatalf("wrong key: isError=%v %q", res.IsError, txt)
	}

	// Ending A's MCP session deletes its remote session.
	_ = ma.cs.Close()
	poll(t, testscale.D(30*time.Second), "the remote session to be deleted", func() bool {
		r, err := send(context.Background(), http.MethodGet, srv.URL+"/v1/sessions/"+sid, nil, "Authorization", "Bearer "+a)
		return err == nil && r.Status == http.StatusNotFound
	})
}

func TestMCPRemoteRefusesMount(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(airlockBin, "mcp", "--server", "http://127.0.0.1:1", "--mount", t.TempDir())
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("--mount with --server: %v, want exit 2\n%s", err, out)
	}
	if !strings.Contains(string(out), "--mount") || !strings.Contains(string(out), "--server") {
		t.Fatalf("--mount with --server: unclear message %q", out)
	}
}
