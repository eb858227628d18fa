package mcpserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// envAPI is a server whose sessions work, whose one-shot calls refuse the
// environment "nope" (404) and "geo" (403) as airlock serve does, and
// which counts snapshot requests.
func envAPI(t *testing.T, snaps *atomic.Int32) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/info":
			_, _ = w.Write([]byte(`{"auth_required":true,"sessions":true,"max_upload_bytes":1,"inputs":[]}`))
		case r.URL.Path == "/v1/tools":
			_, _ = w.Write([]byte(`{"tools":[{"type":"function","function":{"name":"run_python","description":"Run Python.","parameters":{"type":"object","properties":{"code":{"type":"string"}},"required":["code"]}}}]}`))
		case r.Method == http.MethodPost && r.URL.Path == "/v1/sessions":
			_, _ = w.Write([]byte(`{"id":"sess_1"}`))
		case r.URL.Path == "/v1/sessions/sess_1/snapshot":
			snaps.Add(1)
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"snapshot_id":"snap_1","bytes":1}`))
		case r.Method == http.MethodPost && r.URL.Path == "/v1/tool-calls":
			var status int
			var body string
			switch {
			case r.ContentLength != 0 && strings.Contains(readAll(r), `"geo"`):
				status, body = 403, `{"error":{"code":"forbidden","message":"environment \"geo\" is not allowed for this key"}}`
			default:
				status, body = 404, `{"error":{"code":"not_found","message":"environment \"nope\" not found"}}`
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

func readAll(r *http.Request) string {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := r.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// TestSnapshotSessionRefusesUnknownArguments: snapshot_session (and
// fork_session) take no arguments, as their schema says
// (additionalProperties false): an unknown one is a tool error naming it
// and nothing is snapshotted; none works.
func TestSnapshotSessionRefusesUnknownArguments(t *testing.T) {
	var snaps atomic.Int32
	_, cs := remoteSession(t, envAPI(t, &snaps))
	defer cs.Close()
	for _, tool := range []string{"snapshot_session", "fork_session"} {
		res := call(t, cs, tool, map[string]any{"bogus": 1})
		if got := text(t, res); !res.IsError || !strings.Contains(got, "bogus") {
			t.Errorf("%s with an unknown argument: isError=%v %q, want a refusal naming it", tool, res.IsError, got)
		}
	}
	if n := snaps.Load(); n != 0 {
		t.Fatalf("%d snapshots taken for refused calls", n)
	}
	res := call(t, cs, "snapshot_session", map[string]any{})
	if res.IsError || !strings.Contains(text(t, res), "snap_1") || snaps.Load() != 1 {
		t.Fatalf("snapshot_session: isError=%v %q", res.IsError, text(t, res))
	}
}

// TestUnknownEnvironmentIsARefusalNamingIt: a call naming an environment
// the server does not know (404) or the key may not use (403) comes back
// as a refusal naming it, status rejected, not "unavailable" (retry
// later), which it was.
func TestUnknownEnvironmentIsARefusalNamingIt(t *testing.T) {
	var snaps atomic.Int32
	_, cs := remoteSession(t, envAPI(t, &snaps))
	defer cs.Close()
	for _, env := range []string{"nope", "geo"} {
		res := call(t, cs, "run_python", map[string]any{"code": "print(1)", "environment": env})
		got := text(t, res)
		sc := structured(t, res)
		if !res.IsError || !strings.Contains(got, `"`+env+`"`) || sc["status"] != "rejected" || strings.Contains(got, "retry later") {
			t.Errorf("environment %s: isError=%v status %v %q, want a rejection naming it", env, res.IsError, sc["status"], got)
		}
	}
}
