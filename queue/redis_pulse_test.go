package queue

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// longLiveness is the production liveness TTL: the pulse tests show that
// what they measure does not wait for it.
const longLiveness = 30 * time.Second

// pulseSession starts a caller-side queue and a worker process "A"
// holding session s1, both with the production liveness TTL and
// visibility timeout, and session job sj with payload; it returns them
// once A started sj, with the job's outcome to come.
func pulseSession(t *testing.T, name, payload string) (*Redis, *proc, <-chan result) {
	t.Helper()
	srv := redistest.Start(t, false)
	q := faultQueue(t, srv, name, Config{LivenessTTL: longLiveness, VisibilityTimeout: longLiveness})
	a := startWorkerProc(t, srv, name, "A", "AQ_LIVE_MS=30000", "AQ_VIS_MS=30000")
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	t.Cleanup(cancel)
	if out, err := q.Do(ctx, Job{Payload: []byte("open:s1")}); err != nil || string(out) != "A:1:s1" {
		t.Fatalf("open = %q, %v", out, err)
	}
	res := doAsync(ctx, q, Job{ID: "sj", Session: "s1", Payload: []byte(payload)})
	a.waitLine(waitTimeout, "started sj 1")
	return q, a, res
}

// TestRedisSessionHolderKilledLearnsFast: the caller of a session job whose
// worker is killed with -9 learns ErrSessionLost within a few seconds
// (the worker's pulse subscription goes with its connection), not after
// the 30 s liveness TTL and two checks (43 s in issue 26); the next call
// on the session is refused at once.
func TestRedisSessionHolderKilledLearnsFast(t *testing.T) {
	q, a, res := pulseSession(t, "pulsekill", "block-first:z")
	a.kill(syscall.SIGKILL)
	killed := time.Now()
	r := recv(t, res, "the session job's outcome")
	took := time.Since(killed)
	t.Logf("the caller learned the loss %v after kill -9 (liveness TTL %v)", took.Round(10*time.Millisecond), longLiveness)
	if !errors.Is(r.err, ErrSessionLost) {
		t.Fatalf("waiting caller: %q, %v; want ErrSessionLost", r.out, r.err)
	}
	if bound := testscale.D(pulseGrace + 2*pulseEvery + 2*time.Second); took > bound {
		t.Fatalf("the caller learned the loss after %v, want within %v", took, bound)
	}
	ctx, start := testCtx(t), time.Now()
	if _, err := q.Do(ctx, Job{Session: "s1", Payload: []byte("echo:w")}); !errors.Is(err, ErrSessionLost) {
		t.Fatalf("next caller: %v; want ErrSessionLost", err)
	}
	if took := time.Since(start); took > testscale.D(time.Second) {
		t.Fatalf("the next caller was refused after %v, want at once", took)
	}
}

// TestRedisStalledSessionHolderKeepsSession: a session's worker frozen
// (SIGSTOP) for twice the pulse grace while its session job runs keeps its
// session: its connection stays open, so its pulse does, and the job's
// caller gets the result once it resumes.
func TestRedisStalledSessionHolderKeepsSession(t *testing.T) {
	q, a, res := pulseSession(t, "pulsestall", "sleep:300:z")
	a.kill(syscall.SIGSTOP)
	select {
	case r := <-res:
		a.kill(syscall.SIGCONT)
		t.Fatalf("while the worker was frozen the caller got %q, %v", r.out, r.err)
	case <-time.After(2*pulseGrace + pulseEvery):
	}
	a.kill(syscall.SIGCONT)
	if r := recv(t, res, "the session job's result"); r.err != nil || string(r.out) != "A:1:z" {
		t.Fatalf("session job across a frozen worker = %q, %v; want its result", r.out, r.err)
	}
	if out, err := q.Do(testCtx(t), Job{Session: "s1", Payload: []byte("echo:after")}); err != nil || string(out) != "A:1:after" {
		t.Fatalf("next session job = %q, %v", out, err)
	}
}

// TestRedisPulseResubscribes: when Redis drops the pub/sub connections
// (CLIENT KILL TYPE pubsub), a live worker subscribes again well within
// the pulse grace, so its session job in flight is not declared lost.
func TestRedisPulseResubscribes(t *testing.T) {
	hold := pulseGrace + 3*pulseEvery
	q, _, res := pulseSession(t, "pulseresub", "sleep:"+itoa(hold.Milliseconds())+":z")
	ctx := testCtx(t)
	for range 3 { // the first kill may meet a connection still subscribing
		if err := q.rdb.ClientKillByFilter(ctx, "TYPE", "pubsub").Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(pulseEvery / 2)
	}
	if r := recv(t, res, "the session job's result"); r.err != nil || string(r.out) != "A:1:z" {
		t.Fatalf("session job across dropped subscriptions = %q, %v; want its result", r.out, r.err)
	}
	if n, err := q.pulseCount("A"); err != nil || n != 1 {
		t.Fatalf("the worker's pulse after the drops: %d, %v; want 1", n, err)
	}
}
