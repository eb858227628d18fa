package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// successPrefix is the status prefix that counts as an operation answered
// successfully: "2", "101" for a websocket upgrade, or "" (any documented
// status) for an operation that documents no success at all (a kernelspec
// resource, always 404).
func successPrefix(op *openapi3.Operation) string {
	if op.Responses.Value("101") != nil {
		return "101"
	}
	for code := range op.Responses.Map() {
		if strings.HasPrefix(code, "2") {
			return "2"
		}
	}
	return ""
}

// fakeMCP answers /mcp as the streamable transport's shapes: JSON for a
// POST, an event stream for a GET, 204 for a DELETE.
type fakeMCP struct{}

// Handler implements MCP.
func (fakeMCP) Handler(string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
		case http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte(": ok\n\n"))
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
}

// conformGateways drives the Jupyter kernel gateway's routes and /mcp
// through a server of their own and returns what was validated: the
// websocket through a real listener (a recorder cannot upgrade).
func conformGateways(t *testing.T) map[string]bool {
	h := newHarness(t, func(_ *Config, d *Deps) { d.MCP = fakeMCP{} })
	h.do(keyAlice, "GET", "/api", nil, "Authorization", "token "+keyAlice).must(t, 200)
	h.do(keyAlice, "GET", "/api/kernelspecs", nil).must(t, 200)
	h.do(keyAlice, "GET", "/api/kernelspecs/python3", nil).must(t, 200)
	h.do(keyAlice, "GET", "/api/kernelspecs/nope", nil).must(t, 404)
	h.do(keyAlice, "GET", "/kernelspecs/python/logo-64x64.png", nil).must(t, 404)
	k := h.do(keyAlice, "POST", "/api/kernels", map[string]any{"name": "python"}).must(t, 201).JSON(t)
	id := k["id"].(string)
	h.do(keyAlice, "GET", "/api/kernels", nil).must(t, 200)
	h.do(keyAlice, "GET", "/api/kernels/"+id, nil).must(t, 200)
	h.do(keyBob, "GET", "/api/kernels/"+id, nil).must(t, 404)
	h.do(keyAlice, "POST", "/api/kernels/"+id+"/interrupt", nil).must(t, 204)
	h.do(keyAlice, "POST", "/api/kernels/"+id+"/restart", nil).must(t, 200)

	srv := httptest.NewServer(h.srv)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	ws, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/api/kernels/"+id+"/channels",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"token " + keyAlice}}})
	if err != nil {
		t.Fatalf("kernel channels: %v", err)
	}
	ws.Close(websocket.StatusNormalClosure, "")
	if res.StatusCode == http.StatusSwitchingProtocols {
		h.oa.seen["GET /api/kernels/{id}/channels 101"] = true
	}
	h.do(keyAlice, "DELETE", "/api/kernels/"+id, nil).must(t, 204)

	h.do(keyAlice, "POST", "/mcp", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"}).must(t, 200)
	h.do(keyAlice, "GET", "/mcp", nil).must(t, 200)
	h.do(keyAlice, "DELETE", "/mcp", nil).must(t, 204)
	return h.oa.seen
}
