package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/idempotency"
	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/queue"
	"github.com/airlock-dev/airlock/state"
)

// TestRedisStallRefusesCallsFast is issue 26's stall: with the shared
// state store on a Redis that stops answering (SIGSTOP), a new call was
// refused with 503 only after 10 s, its idempotency reservation waiting
// on the client's i/o timeouts. The reservation is bounded
// (idempotency.OpTimeout): the call is refused 503 unavailable, with
// Retry-After, within that bound, and is not run.
func TestRedisStallRefusesCallsFast(t *testing.T) {
	srv := redistest.Start(t, false)
	rdb, err := queue.NewRedisClient(srv.URL(), 2*time.Second) // as serve builds it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	disp := &fakeDispatcher{}
	r := newRealAPI(t, func(_ *Config, d *Deps) { d.State, d.Dispatcher = state.NewRedis(rdb, "stall:"), disp })
	srv.Pause(t)

	body := `{"id":"call_stall","type":"function","function":{"name":"run_python","arguments":{"code":"print(1)"}}}`
	req, _ := http.NewRequest("POST", r.url+"/v1/tool-calls", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	el := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	t.Logf("refused after %v", el.Round(10*time.Millisecond))
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Fatalf("during the stall: %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if bound := idempotency.OpTimeout + testscale.D(2*time.Second); el > bound {
		t.Fatalf("refused after %v, over %v", el, bound)
	}
	if n := len(disp.calls); n != 0 {
		t.Fatalf("the call ran %d times during the stall", n)
	}
}
