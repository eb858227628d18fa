package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// stallFor is the workers-only Redis stall of issue 13's fault run (over
// ~10 s destroyed sessions when the liveness TTL was 10 s).
const stallFor = 15 * time.Second

// TestWorkersOnlyRedisStall: the worker reaches Redis through a proxy that
// stalls for 15 s while serve keeps its own direct connection. A session
// call sent during the stall waits and then succeeds; the session is not
// declared lost (its next call keeps its Python variable), and no
// container is left that no session owns: the worker's only container is
// the session's, and it goes when the session is closed. Both processes
// reap every second, so an over-eager reaper would show too.
func TestWorkersOnlyRedisStall(t *testing.T) {
	t.Parallel()
	dc := requireDocker(t)
	rs := redistest.Start(t, false)
	rdb := rs.Client(t)
	proxy := startStallProxy(t, fmt.Sprintf("127.0.0.1:%d", rs.Port()))
	qname := fmt.Sprintf("stall%d", time.Now().UnixNano())
	keys := "airlock:{" + qname + "}:"
	srv := startServe(t, "--redis", rs.URL(), "--queue", qname, "--concurrency", "0", "--reap-interval", "1s")
	w := startProc(t, "airlock worker", "worker", "--redis", proxy.URL(), "--queue", qname, "--concurrency", "2",
		"--pool", "0", "--reap-interval", "1s")
	w.waitLog("worker started", startTimeout)

	sid, _ := do(t, "POST", srv.URL+"/v1/sessions", nil).must(t, http.StatusCreated).JSON(t)["id"].(string)
	call := func(ctx context.Context, code string) (response, error) {
		return send(ctx, "POST", srv.URL+"/v1/sessions/"+sid+"/tool-calls", toolCall("", "run_python", map[string]any{"code": code}))
	}
	decodeCall(t, do(t, "POST", srv.URL+"/v1/sessions/"+sid+"/tool-calls", toolCall("", "run_python", map[string]any{"code": "x = 41"}))).mustOK(t)
	before := containers(t, dc, w.pid())
	if len(before) != 1 || before[0].Labels["airlock.kind"] != "session" {
		t.Fatalf("the worker's containers before the stall: %s, want the session's alone", describe(before))
	}

	proxy.stall(true)
	stalledAt := time.Now()
	during := make(chan answer, 1)
	go func() {
		time.Sleep(2 * time.Second) // well inside the stall
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
		defer cancel()
		r, err := call(ctx, "x += 1\nprint(x)")
		during <- answer{r, err}
	}()
	time.Sleep(stallFor)
	ttl, _ := rdb.TTL(context.Background(), keys+"alive:"+workerIDOf(t, w)).Result()
	proxy.stall(false)
	t.Logf("stalled the worker's Redis link for %s; its liveness key had %s left at the end", time.Since(stalledAt).Round(100*time.Millisecond), ttl)

	a := <-during
	if a.err != nil {
		t.Fatalf("the session call sent during the stall: %v", a.err)
	}
	if got := decodeCall(t, a.r).mustOK(t); got != "42\n" {
		t.Fatalf("the call sent during the stall printed %q, want 42", got)
	}
	t.Logf("the call sent during the stall answered %s after the stall began", time.Since(stalledAt).Round(100*time.Millisecond))
	time.Sleep(3 * time.Second) // a few reaper sweeps after the stall
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	r, err := call(ctx, "print(x)")
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if r.Status == http.StatusConflict {
		t.Fatalf("the session was declared lost after the stall: %s", r.Body)
	}
	if got := decodeCall(t, r).mustOK(t); got != "42\n" {
		t.Fatalf("after the stall the session printed %q, want 42 (state lost?)", got)
	}
	after := containers(t, dc, w.pid())
	if len(after) != 1 || after[0].ID != before[0].ID || after[0].State != "running" {
		t.Fatalf("the worker's containers after the stall: %s, want the session's %.12s alone", describe(after), before[0].ID)
	}
	do(t, "DELETE", srv.URL+"/v1/sessions/"+sid, nil).must(t, http.StatusNoContent)
	poll(t, testscale.D(time.Minute), "the closed session's container to go", func() bool { return len(containers(t, dc, w.pid())) == 0 })
}

// workerIDOf is the worker id a worker process logged at start.
func workerIDOf(t *testing.T, p *proc) string {
	t.Helper()
	m := workerLogID.FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("%s logged no worker id", p.name)
	}
	return m[1]
}

// TestRedisStallRefusesNewCalls: with Redis stalled (SIGSTOP), a new tool
// call to serve --redis is refused with 503 within the state store's and
// the queue's 2 s bounds. It took 10 s: the idempotency reservation waited
// on the client's read timeout and its retry, twice (issue 26).
func TestRedisStallRefusesNewCalls(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t, false)
	qname := fmt.Sprintf("stallnew%d", time.Now().UnixNano())
	srv := startServe(t, "--redis", rs.URL(), "--queue", qname, "--concurrency", "0")
	do(t, "GET", srv.URL+"/readyz", nil) // connections open before the stall
	rs.Pause(t)
	start := time.Now()
	r := do(t, "POST", srv.URL+"/v1/tool-calls", toolCall("call_stalled", "run_python", map[string]any{"code": "print(1)"}))
	took := time.Since(start)
	if r.Status != http.StatusServiceUnavailable {
		t.Fatalf("a call during a Redis stall: %d %.300s, want 503", r.Status, r.Body)
	}
	t.Logf("a call during a Redis stall was refused after %s: %.200s", took.Round(10*time.Millisecond), r.Body)
	if bound := 2*time.Second + testscale.D(2*time.Second); took > bound {
		t.Errorf("a call during a Redis stall was refused after %s, want within %s", took, bound)
	}
}
