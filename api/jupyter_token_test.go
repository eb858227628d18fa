package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// TestJupyterTokenQuery: the gateway takes Jupyter's `?token=KEY` when no
// Authorization header is sent (a browser's websocket cannot send one); a
// wrong token is 401 and the parameter never reaches the gateway.
func TestJupyterTokenQuery(t *testing.T) {
	h := newHarness(t, nil)
	h.do("", "GET", "/api/kernels?token="+keyAlice, nil).must(t, 200)
	h.do("", "GET", "/api/kernels?token=nope", nil).must(t, 401)
	h.do("", "GET", "/api/kernels", nil).must(t, 401)
	id := h.do("", "POST", "/api/kernels?token="+keyAlice, map[string]any{"name": "python"}).must(t, 201).JSON(t)["id"].(string)
	// Bob's header wins over Alice's parameter: his key does not see her kernel.
	h.do(keyBob, "GET", "/api/kernels/"+id+"?token="+keyAlice, nil).must(t, 404)

	srv := httptest.NewServer(h.srv)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/api/kernels/" + id + "/channels?session_id=s1&token=" + keyAlice
	ws, res, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatalf("kernel channels with ?token=: %v", err)
	}
	ws.Close(websocket.StatusNormalClosure, "")
	if res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("kernel channels with ?token=: %d", res.StatusCode)
	}
}
