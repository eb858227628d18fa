package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/client"
)

// TestExecRemoteFetchPrintsThePage: `airlock exec --server URL fetch_url
// PAGE` prints the page's text, as the local mode does. fetch_url runs in
// Airlock, not in a sandbox: its answer is the tool message (result.stdout
// is empty), and the remote mode printed nothing. The server here answers
// with the body a real serve gave for an allowed page.
func TestExecRemoteFetchPrintsThePage(t *testing.T) {
	const answer = `{"message":{"role":"tool","tool_call_id":"call_1","content":"URL: http://data.test/page.html\nHTTP status: 200\nContent-Type: text/html\nTitle: T\n\n# Hello outside"},` +
		`"result":{"tool_call_id":"call_1","name":"fetch_url","status":"ok","duration_ms":2,"stdout":"","stderr":"","truncated":false,"artifacts":[],` +
		`"network":[{"host":"data.test","port":80,"allowed":true,"bytes":518}]}}`
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	}))
	defer hs.Close()
	var out, errb bytes.Buffer
	code := execRemote(context.Background(), hs.URL, "k", client.ToolCall{Name: "fetch_url", Arguments: map[string]any{"url": "http://data.test/page.html"}}, false, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "# Hello outside") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}
