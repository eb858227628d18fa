package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// TestJupyterPrintRoundTrip measures the figure of issue 31: print(1) in
// one session over the gateway's websocket (execute_request to its idle)
// against the same call over the REST session route (POST
// /v1/sessions/{id}/tool-calls), interleaved, p50 side by side. The
// protocol may add at most 1 ms; the test logs both and fails only when
// the websocket is slower by more than a scaled bound.
func TestJupyterPrintRoundTrip(t *testing.T) {
	requireDocker(t)
	srv := startKeyedServe(t, jupyterKeys, "--rate", "-1")
	auth := "token " + aliceKey
	kres := do(t, "POST", srv.URL+"/api/kernels", map[string]any{"name": "python"}, "Authorization", auth).must(t, 201)
	kid, _ := kres.JSON(t)["id"].(string)
	sid := "s-" + strings.ReplaceAll(strings.TrimPrefix(kid, "s-"), "-", "")
	k := dialKernel(t, "ws"+strings.TrimPrefix(srv.URL, "http")+"/api/kernels/"+kid+"/channels", auth)
	k.ready(testscale.D(30 * time.Second))

	viaWS := func() time.Duration {
		t0 := time.Now()
		ms := k.execute("print(1)", false)
		d := time.Since(t0)
		if stdout(ms) != "1\n" {
			t.Fatalf("print(1) over the websocket: %s", summary(ms))
		}
		return d
	}
	viaREST := func() time.Duration {
		t0 := time.Now()
		r := do(t, "POST", srv.URL+"/v1/sessions/"+sid+"/tool-calls", toolCall("", "run_python", map[string]any{"code": "print(1)"}),
			"Authorization", "Bearer "+aliceKey).must(t, 200)
		d := time.Since(t0)
		if !strings.Contains(string(r.Body), `"stdout":"1\n"`) {
			t.Fatalf("print(1) over REST: %s", r.Body)
		}
		return d
	}
	for range 5 { // warm both paths
		viaWS()
		viaREST()
	}
	const n = 40
	var ws, rest []time.Duration
	for range n {
		ws = append(ws, viaWS())
		rest = append(rest, viaREST())
	}
	p50 := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	pws, prest := p50(ws), p50(rest)
	t.Logf("print(1) round trip p50 over %d calls each: websocket %s, REST session route %s, difference %s",
		n, pws.Round(10*time.Microsecond), prest.Round(10*time.Microsecond), fmt.Sprint((pws - prest).Round(10*time.Microsecond)))
	if limit := testscale.D(5 * time.Millisecond); pws-prest > limit {
		t.Fatalf("the websocket adds %s to print(1) over the REST route, over %s", pws-prest, limit)
	}
}
