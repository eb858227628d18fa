package queue

import (
	"context"
	"strings"
	"sync"
	"syscall"
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

// TestRedisEnvironmentHolderLost: a job sent to an environment's holder
// is not lost with it. Killed (-9) while running it, the caller moves the
// job to its lane once the holder's pulse is gone; stopped while the job
// waits in its stream, the holder moves it there itself. Either way
// another worker runs it.
func TestRedisEnvironmentHolderLost(t *testing.T) {
	srv := redistest.Start(t, false)
	name := "envlost"
	cfg := Config{RedisURL: srv.URL(), Name: name, LivenessTTL: testscale.D(time.Second), VisibilityTimeout: testscale.D(time.Second)}
	q, err := NewRedis(cfg, Deps{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()

	// A helper process holds h1 and sleeps on its jobs.
	a := startWorkerProc(t, srv, name, "a", "AQ_ENVS=h1", "AQ_VIS_MS=1000", "AQ_LIVE_MS=1000")
	waitFor(t, func() bool { return q.envHolder(ctx, "h1") == "a" })
	// b holds nothing and answers at once.
	b, err := q.NewWorker(WorkerConfig{ID: "b", ReadBlock: 100 * time.Millisecond, Grace: testscale.D(2 * time.Second)},
		HandlerFunc(func(context.Context, Job) (Reply, error) { return Reply{Payload: []byte("b")}, nil }))
	if err != nil {
		t.Fatal(err)
	}
	bctx, stopB := context.WithCancel(ctx)
	bdone := make(chan struct{})
	go func() { defer close(bdone); _ = b.Run(bctx) }()
	defer func() { stopB(); <-bdone }()

	type outcome struct {
		out string
		err error
	}
	res := make(chan outcome, 1)
	go func() {
		out, err := q.Do(ctx, Job{ID: "killed", Payload: []byte("sleep:600000:x"), Environment: "h1", Deadline: time.Now().Add(testscale.D(time.Minute))})
		res <- outcome{string(out), err}
	}()
	a.waitLine(testscale.D(30*time.Second), "started killed")
	a.kill(syscall.SIGKILL)
	select {
	case o := <-res:
		if o.err != nil || o.out != "b" {
			t.Fatalf("the job of the killed holder: %q %v, want it run by b", o.out, o.err)
		}
	case <-time.After(testscale.D(45 * time.Second)):
		t.Fatal("the job of the killed holder never ended")
	}

	// An in-process holder with one slot, busy, stopped while a second
	// job waits in its stream.
	release := make(chan struct{})
	c, err := q.NewWorker(WorkerConfig{ID: "c", InteractiveReserve: -1, Environments: func() []string { return []string{"h2"} },
		ReadBlock: 100 * time.Millisecond, Grace: testscale.D(5 * time.Second)},
		HandlerFunc(func(ctx context.Context, j Job) (Reply, error) {
			<-release
			return Reply{Payload: []byte("c")}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	cctx, stopC := context.WithCancel(ctx)
	cdone := make(chan struct{})
	go func() { defer close(cdone); _ = c.Run(cctx) }()
	waitFor(t, func() bool { return q.envHolder(ctx, "h2") == "c" })
	first := make(chan outcome, 1)
	go func() {
		out, err := q.Do(ctx, Job{ID: "busy", Payload: []byte("x"), Environment: "h2", Deadline: time.Now().Add(testscale.D(time.Minute))})
		first <- outcome{string(out), err}
	}()
	time.Sleep(testscale.D(300 * time.Millisecond))
	second := make(chan outcome, 1)
	go func() {
		out, err := q.Do(ctx, Job{ID: "waiting", Payload: []byte("y"), Environment: "h2", Deadline: time.Now().Add(testscale.D(time.Minute))})
		second <- outcome{string(out), err}
	}()
	time.Sleep(testscale.D(300 * time.Millisecond))
	stopC()
	time.Sleep(testscale.D(200 * time.Millisecond))
	close(release)
	<-cdone
	if o := <-first; o.err != nil || o.out != "c" {
		t.Fatalf("the running job: %q %v", o.out, o.err)
	}
	select {
	case o := <-second:
		if o.err != nil || o.out != "b" {
			t.Fatalf("the job waiting at the stopped holder: %q %v, want it run by b", o.out, o.err)
		}
	case <-time.After(testscale.D(45 * time.Second)):
		t.Fatal("the job waiting at the stopped holder never ended")
	}
}
