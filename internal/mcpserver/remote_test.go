package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/client"
)

// cannedAPI answers /v1/info and /v1/tools, and every other route with
// the error answer of status (0: a session, then a tool call, that work).
func cannedAPI(t *testing.T, status int, retryAfter, code string, deleted *atomic.Int32) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/info":
			_, _ = w.Write([]byte(`{"auth_required":true,"sessions":true,"max_upload_bytes":1,"inputs":[]}`))
			return
		case r.URL.Path == "/v1/tools":
			_, _ = w.Write([]byte(`{"tools":[{"type":"function","function":{"name":"run_python","description":"Run Python.","parameters":{"type":"object","properties":{"code":{"type":"string"}},"required":["code"]}}}]}`))
			return
		case status != 0:
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"error":{"code":"` + code + `","message":"canned ` + code + `"}}`))
			return
		case r.Method == http.MethodPost && r.URL.Path == "/v1/sessions":
			_, _ = w.Write([]byte(`{"id":"sess_1"}`))
		case r.Method == http.MethodPost && r.URL.Path == "/v1/sessions/sess_1/tool-calls":
			_, _ = w.Write([]byte(`{"message":{"role":"tool","tool_call_id":"c","content":"ok: 1"},"result":{"tool_call_id":"c","name":"run_python","status":"ok","exit_code":0,"stdout":"1\n","stderr":"","truncated":false,"artifacts":[]}}`))
		case r.Method == http.MethodDelete && r.URL.Path == "/v1/sessions/sess_1":
			deleted.Add(1)
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

// remoteSession connects an MCP client to a Server over the remote
// backend of ts.
func remoteSession(t *testing.T, ts *httptest.Server) (*Server, *mcp.ClientSession) {
	t.Helper()
	c, err := client.New(ts.URL, client.WithAPIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	be, err := NewRemote(context.Background(), c, RemoteConfig{Server: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{}, Deps{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.MCPServer("x").Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	return srv, cs
}

func TestRemoteErrorsAreToolErrors(t *testing.T) {
	for _, tc := range []struct {
		status     int
		retry      string
		code, want string
	}{
		{401, "", "unauthorized", "401 unauthorized: canned unauthorized (check the key given with --key or AIRLOCK_API_KEY)"},
		{429, "3", "busy", "429 busy: canned busy; retry after 3s"},
		{503, "", "unavailable", "503 unavailable: canned unavailable; retry later"},
	} {
		t.Run(tc.code, func(t *testing.T) {
			_, cs := remoteSession(t, cannedAPI(t, tc.status, tc.retry, tc.code, nil))
			defer cs.Close()
			res := call(t, cs, "run_python", map[string]any{"code": "print(1)"})
			if got := text(t, res); !res.IsError || !strings.Contains(got, tc.want) {
				t.Fatalf("isError=%v %q, want %q", res.IsError, got, tc.want)
			}
		})
	}
}

func TestRemoteToolsCallsAndSessionClose(t *testing.T) {
	var deleted atomic.Int32
	_, cs := remoteSession(t, cannedAPI(t, 0, "", "", &deleted))
	lt, err := cs.ListTools(context.Background(), nil)
	// The server's one tool, and the session tools of the remote backend
	// (snapshot, fork, variables).
	if err != nil || len(lt.Tools) != 4 || lt.Tools[0].Name != "fork_session" || lt.Tools[1].Name != "list_variables" ||
		lt.Tools[2].Name != "run_python" || lt.Tools[2].Description != "Run Python." || lt.Tools[3].Name != "snapshot_session" {
		t.Fatalf("tools: %v %+v", err, lt)
	}
	res := call(t, cs, "run_python", map[string]any{"code": "print(1)"})
	if res.IsError || text(t, res) != "ok: 1" {
		t.Fatalf("call: isError=%v %q", res.IsError, text(t, res))
	}
	if sc := structured(t, res); sc["status"] != "ok" {
		t.Fatalf("structured: %v", sc)
	}
	_ = cs.Close()
	waitFor(t, "the remote session to be deleted", func() bool { return deleted.Load() == 1 })
}

// richResult is a server's answer carrying every part of a result.
const richResult = `{"message":{"role":"tool","tool_call_id":"c","content":"error: ZeroDivisionError"},` +
	`"result":{"tool_call_id":"c","name":"run_python","status":"error","duration_ms":12,"exit_code":1,"stdout":"a\n","stderr":"b\n",` +
	`"truncated":true,"warnings":["w"],"artifacts":[{"id":"art_1","name":"fig.png","mime":"image/png","size":4,"sha256":"ab","url":"/v1/artifacts/art_1"}],` +
	`"session_id":"sess_1","error":{"name":"ZeroDivisionError","value":"division by zero","traceback":["t1","t2"]},` +
	`"execution_count":7,"display":[{"data":{"text/plain":"42"}}],"dropped":{"stdout":100,"stderr":3},"kernel_restarted":true}}`

// TestRemoteKeepsTheWholeResult: what the server answers reaches the MCP
// client whole: the exception, the rich displays, the dropped byte counts,
// the execution count (a remote result once lost all four), and the
// artifact's bytes as an image.
func TestRemoteKeepsTheWholeResult(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/info":
			_, _ = w.Write([]byte(`{"auth_required":true,"sessions":true,"max_upload_bytes":1,"inputs":[]}`))
		case "/v1/tools":
			_, _ = w.Write([]byte(`{"tools":[{"type":"function","function":{"name":"run_python","parameters":{"type":"object"}}}]}`))
		case "/v1/sessions":
			_, _ = w.Write([]byte(`{"id":"sess_1"}`))
		case "/v1/sessions/sess_1/tool-calls":
			_, _ = w.Write([]byte(richResult))
		case "/v1/artifacts/art_1":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(pngBytes[:4])
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(ts.Close)
	_, cs := remoteSession(t, ts)
	defer cs.Close()
	res := call(t, cs, "run_python", map[string]any{"code": "1/0"})
	var want struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal([]byte(richResult), &want); err != nil {
		t.Fatal(err)
	}
	if got := structured(t, res); !reflect.DeepEqual(got, want.Result) {
		t.Fatalf("structured content\n got %v\nwant %v", got, want.Result)
	}
	img, ok := res.Content[1].(*mcp.ImageContent)
	if !res.IsError || !ok || string(img.Data) != string(pngBytes[:4]) {
		t.Fatalf("isError=%v content %#v", res.IsError, res.Content[1])
	}
}
