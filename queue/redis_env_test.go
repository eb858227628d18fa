package queue

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// TestRedisEnvironmentRouting: a job for an environment goes only to the
// worker advertising its hash; when no live worker holds it, the job goes
// to its lane, its deadline grows by the build allowance, and the worker
// that takes it then holds it (and gets the next jobs too).
func TestRedisEnvironmentRouting(t *testing.T) {
	srv := redistest.Start(t, false)
	cfg := Config{RedisURL: srv.URL(), Name: "envroute", LivenessTTL: testscale.D(time.Second), VisibilityTimeout: testscale.D(3 * time.Second)}
	q, err := NewRedis(cfg, Deps{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()

	type holds struct {
		mu sync.Mutex
		m  map[string]bool
	}
	held := map[string]*holds{"a": {m: map[string]bool{"h1": true}}, "b": {m: map[string]bool{}}}
	list := func(id string) func() []string {
		return func() []string {
			h := held[id]
			h.mu.Lock()
			defer h.mu.Unlock()
			var out []string
			for k := range h.m {
				out = append(out, k)
			}
			return out
		}
	}
	deadlines := make(chan time.Duration, 16)
	start := func(id string) (Worker, context.CancelFunc, chan struct{}) {
		var w Worker
		h := HandlerFunc(func(ctx context.Context, j Job) (Reply, error) {
			if j.Environment != "" {
				t.Errorf("a worker sees Job.Environment %q: it stays with the caller", j.Environment)
			}
			dl, _ := ctx.Deadline()
			deadlines <- time.Until(dl)
			env, _, _ := strings.Cut(string(j.Payload), ":")
			hs := held[id]
			hs.mu.Lock()
			had := hs.m[env]
			hs.m[env] = true // "built it first"
			hs.mu.Unlock()
			if !had {
				Advertise(w)
			}
			return Reply{Payload: []byte(id)}, nil
		})
		w, err := q.NewWorker(WorkerConfig{ID: id, Environments: list(id), ReadBlock: 100 * time.Millisecond, Grace: testscale.D(2 * time.Second)}, h)
		if err != nil {
			t.Fatal(err)
		}
		wctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = w.Run(wctx) }()
		return w, stop, done
	}
	_, stopA, doneA := start("a")
	_, stopB, doneB := start("b")
	defer func() { stopB(); <-doneB }()
	waitFor(t, func() bool { return q.envHolder(ctx, "h1") == "a" })

	do := func(env string, allowance time.Duration) string {
		t.Helper()
		out, err := q.Do(ctx, Job{Payload: []byte(env + ":x"), Environment: env, BuildAllowance: allowance, Deadline: time.Now().Add(testscale.D(10 * time.Second))})
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	for i := range 12 {
		if got := do("h1", time.Hour); got != "a" {
			t.Fatalf("job %d for h1 ran on %q, want the holder a", i, got)
		}
		if d := <-deadlines; d > testscale.D(10*time.Second) {
			t.Fatalf("job %d went to a holder but its deadline grew: %s", i, d)
		}
	}
	// Nobody holds h2: the job goes to a lane, with the allowance.
	got := do("h2", time.Hour)
	if d := <-deadlines; d < 50*time.Minute {
		t.Fatalf("a job no worker holds the environment of has deadline in %s, want the build allowance added", d)
	}
	if got != "a" && got != "b" {
		t.Fatalf("h2 ran on %q", got)
	}
	waitFor(t, func() bool { return q.envHolder(ctx, "h2") == got })

	// The holder of h1 leaves: the next h1 job goes to b, which builds
	// it and then holds it.
	stopA()
	<-doneA
	waitFor(t, func() bool { return q.envHolder(ctx, "h1") == "" })
	if got := do("h1", time.Hour); got != "b" {
		t.Fatalf("after a left, h1 ran on %q", got)
	}
	<-deadlines
	waitFor(t, func() bool { return q.envHolder(ctx, "h1") == "b" })
	for range 3 {
		if got := do("h1", 0); got != "b" {
			t.Fatalf("h1 ran on %q, want its new holder b", got)
		}
		<-deadlines
	}
}
