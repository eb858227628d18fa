package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// newQueueFunc builds a fresh, isolated queue for one contract test; the
// factory closes it at the end of the test.
type newQueueFunc func(t *testing.T, cfg Config, reg prometheus.Registerer) Queue

// contractConfig keeps the contract's timeouts small but generous: a
// heartbeat (a third of them) late by more than two thirds would make a
// job run twice, so they stretch with the test scale.
func contractConfig() Config {
	return Config{VisibilityTimeout: testscale.D(time.Second), LivenessTTL: testscale.D(time.Second), DefaultTimeout: testscale.D(30 * time.Second)}
}

// waitTimeout bounds any wait for something that must happen.
var waitTimeout = testscale.D(20 * time.Second)

// runWorker runs a worker until the returned stop is called (or the test
// ends); stop waits for Run to return.
func runWorker(t *testing.T, q Queue, cfg WorkerConfig, h Handler) (stop func()) {
	t.Helper()
	if cfg.ReadBlock == 0 {
		cfg.ReadBlock = 200 * time.Millisecond
	}
	w, err := q.NewWorker(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("worker %s: Run: %v", w.ID(), err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// recv waits for a value or fails the test.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// result is one Do outcome.
type result struct {
	out []byte
	err error
}

// doAsync runs Do in a goroutine.
func doAsync(ctx context.Context, q Queue, j Job) <-chan result {
	ch := make(chan result, 1)
	go func() {
		out, err := q.Do(ctx, j)
		ch <- result{out, err}
	}()
	return ch
}

// testCtx is a context bounded by waitTimeout.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// runContract is the behaviour every Queue implementation must show.
func runContract(t *testing.T, newQ newQueueFunc) {
	t.Run("RoundTrip", func(t *testing.T) {
		q := newQ(t, contractConfig(), nil)
		seen := make(chan Job, 1)
		runWorker(t, q, WorkerConfig{ID: "w1"}, HandlerFunc(func(ctx context.Context, j Job) (Reply, error) {
			if _, ok := ctx.Deadline(); !ok {
				return Reply{}, errors.New("handler context has no deadline")
			}
			seen <- j
			return Reply{Payload: append([]byte("re:"), j.Payload...)}, nil
		}))
		dl := time.Now().Add(testscale.D(10 * time.Second)).Truncate(time.Millisecond)
		out, err := q.Do(testCtx(t), Job{ID: "j1", Owner: "alice", Payload: []byte("hi\x00there"), Deadline: dl})
		if err != nil || string(out) != "re:hi\x00there" {
			t.Fatalf("Do = %q, %v", out, err)
		}
		j := recv(t, seen, "job")
		if j.ID != "j1" || j.Owner != "alice" || j.Attempt != 1 || !j.Deadline.Equal(dl) || j.EnqueuedAt.IsZero() {
			t.Fatalf("handler saw %+v", j)
		}
	})

	t.Run("ProgressArrivesInOrderBeforeOutcome", func(t *testing.T) {
		q := newQ(t, contractConfig(), nil)
		listening := make(chan bool, 2)
		runWorker(t, q, WorkerConfig{ID: "w1"}, HandlerFunc(func(ctx context.Context, j Job) (Reply, error) {
			listening <- Listening(ctx)
			for i := 0; i < 50; i++ {
				Progress(ctx, []byte(fmt.Sprintf("line %d\n", i)))
			}
			Progress(ctx, make([]byte, MaxProgressBytes+1)) // dropped
			return Reply{Payload: []byte("done")}, nil
		}))
		var mu sync.Mutex
		var got []string
		out, err := q.Do(testCtx(t), Job{Owner: "alice", OnProgress: func(b []byte) {
			mu.Lock()
			got = append(got, string(b))
			mu.Unlock()
		}})
		if err != nil || string(out) != "done" {
			t.Fatalf("Do = %q, %v", out, err)
		}
		if !<-listening {
			t.Fatal("Listening = false in the handler of a job whose caller gave OnProgress")
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 50 {
			t.Fatalf("got %d progress messages, want 50: %q", len(got), got)
		}
		for i, g := range got {
			if g != fmt.Sprintf("line %d\n", i) {
				t.Fatalf("message %d = %q (out of order or altered)", i, g)
			}
		}
		// Without OnProgress, Progress is a no-op and the job still runs.
		if out, err := q.Do(testCtx(t), Job{Owner: "alice"}); err != nil || string(out) != "done" {
			t.Fatalf("Do without OnProgress = %q, %v", out, err)
		}
	})
	t.Run("ManyConcurrent", func(t *testing.T) {
		q := newQ(t, contractConfig(), nil)
		for _, id := range []string{"w1", "w2"} {
			runWorker(t, q, WorkerConfig{ID: id, Concurrency: 3}, testHandler(id, func(Job) {}))
		}
		ctx := testCtx(t)
		var wg sync.WaitGroup
		errs := make(chan error, 60)
		for i := range 60 {
			wg.Go(func() {
				out, err := q.Do(ctx, Job{Owner: "o", Payload: fmt.Appendf(nil, "echo:%d", i)})
				if err == nil && !strings.HasSuffix(string(out), fmt.Sprintf(":1:%d", i)) {
					err = fmt.Errorf("job %d got %q", i, out)
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("HandlerErrorIsJobFailed", func(t *testing.T) {
		q := newQ(t, contractConfig(), nil)
		runWorker(t, q, WorkerConfig{}, HandlerFunc(func(context.Context, Job) (Reply, error) {
			return Reply{}, errors.New("docker daemon unreachable")
		}))
		_, err := q.Do(testCtx(t), Job{})
		if !errors.Is(err, ErrJobFailed) || !strings.Contains(err.Error(), "docker daemon unreachable") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("HandlerPanicIsJobFailed", func(t *testing.T) {
		q := newQ(t, contractConfig(), nil)
		runWorker(t, q, WorkerConfig{}, HandlerFunc(func(context.Context, Job) (Reply, error) {
			panic("boom")
		}))
		_, err := q.Do(testCtx(t), Job{})
		if !errors.Is(err, ErrJobFailed) || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("DeadlineCancelsHandler", func(t *testing.T) {
		q := newQ(t, contractConfig(), nil)
		observed := make(chan error, 1)
		runWorker(t, q, WorkerConfig{}, HandlerFunc(func(ctx context.Context, j Job) (Reply, error) {
			<-ctx.Done()
			observed <- ctx.Err()
			return Reply{}, ctx.Err()
		}))
		_, err := q.Do(testCtx(t), Job{Deadline: time.Now().Add(testscale.D(300 * time.Millisecond))})
		if !errors.Is(err, ErrDeadline) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
		recv(t, observed, "handler to observe the deadline")
	})

	t.Run("PastDeadlineRefused", func(t *testing.T) {
		q := newQ(t, contractConfig(), nil)
		_, err := q.Do(testCtx(t), Job{Deadline: time.Now().Add(-time.Second)})
		if !errors.Is(err, ErrDeadline) {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("CallerCancelCancelsHandler", func(t *testing.T) {
		q := newQ(t, contractConfig(), nil)
		started, observed := make(chan struct{}, 1), make(chan error, 1)
		runWorker(t, q, WorkerConfig{}, HandlerFunc(func(ctx context.Context, j Job) (Reply, error) {
			started <- struct{}{}
			<-ctx.Done()
			observed <- context.Cause(ctx)
			return Reply{}, ctx.Err()
		}))
		ctx, cancel := context.WithCancel(testCtx(t))
		res := doAsync(ctx, q, Job{})
		recv(t, started, "handler start")
		cancel()
		r := recv(t, res, "Do to return")
		if !errors.Is(r.err, ErrCanceled) || !errors.Is(r.err, context.Canceled) {
			t.Fatalf("err = %v", r.err)
		}
		if cause := recv(t, observed, "handler to observe cancellation"); cause == nil {
			t.Fatal("no cause")
		}
	})

	t.Run("AdmissionPerOwner", func(t *testing.T) {
		cfg := contractConfig()
		cfg.MaxPerOwner = 2
		q := newQ(t, cfg, nil)
		started, release := make(chan struct{}, 3), make(chan struct{})
		runWorker(t, q, WorkerConfig{Concurrency: 3}, HandlerFunc(func(ctx context.Context, j Job) (Reply, error) {
			if string(j.Payload) == "hold" {
				started <- struct{}{}
				<-release
			}
			return Reply{Payload: []byte("done")}, nil
		}))
		ctx := testCtx(t)
		a1 := doAsync(ctx, q, Job{Owner: "a", Payload: []byte("hold")})
		a2 := doAsync(ctx, q, Job{Owner: "a", Payload: []byte("hold")})
		recv(t, started, "first job")
		recv(t, started, "second job")
		if _, err := q.Do(ctx, Job{Owner: "a"}); !errors.Is(err, ErrBusy) {
			t.Fatalf("third job of owner a: err = %v, want ErrBusy", err)
		}
		if out, err := q.Do(ctx, Job{Owner: "b"}); err != nil || string(out) != "done" {
			t.Fatalf("owner b: %q, %v", out, err)
		}
		close(release)
		for _, ch := range []<-chan result{a1, a2} {
			if r := recv(t, ch, "held job"); r.err != nil {
				t.Fatal(r.err)
			}
		}
		if _, err := q.Do(ctx, Job{Owner: "a"}); err != nil {
			t.Fatalf("owner a after release: %v", err)
		}
	})

	t.Run("AdmissionDepth", func(t *testing.T) {
		cfg := contractConfig()
		cfg.MaxDepth = 2
		reg := prometheus.NewRegistry()
		q := newQ(t, cfg, reg)
		started, release := make(chan struct{}, 1), make(chan struct{})
		runWorker(t, q, WorkerConfig{Concurrency: 1, InteractiveReserve: -1}, HandlerFunc(func(ctx context.Context, j Job) (Reply, error) {
			if string(j.Payload) == "hold" {
				started <- struct{}{}
				<-release
			}
			return Reply{}, nil
		}))
		ctx := testCtx(t)
		r1 := doAsync(ctx, q, Job{Payload: []byte("hold")})
		recv(t, started, "first job")
		r2 := doAsync(ctx, q, Job{Owner: "x"})
		waitGauge(t, reg, "airlock_queue_depth", 2)
		if _, err := q.Do(ctx, Job{Owner: "y"}); !errors.Is(err, ErrBusy) {
			t.Fatalf("err = %v, want ErrBusy", err)
		}
		close(release)
		for _, ch := range []<-chan result{r1, r2} {
			if r := recv(t, ch, "job"); r.err != nil {
				t.Fatal(r.err)
			}
		}
	})

	t.Run("SessionsRouteToHolder", func(t *testing.T) {
		q := newQ(t, contractConfig(), nil)
		stops := map[string]func(){}
		for _, id := range []string{"w1", "w2"} {
			stops[id] = runWorker(t, q, WorkerConfig{ID: id, Concurrency: 2}, testHandler(id, func(Job) {}))
		}
		ctx := testCtx(t)
		if _, err := q.Do(ctx, Job{Session: "nope", Payload: []byte("echo:x")}); !errors.Is(err, ErrSessionLost) || !errors.Is(err, ErrNotStarted) {
			t.Fatalf("unknown session: err = %v", err)
		}
		holder := func(s string) string {
			out, err := q.Do(ctx, Job{Payload: []byte("open:" + s)})
			if err != nil {
				t.Fatal(err)
			}
			return strings.Split(string(out), ":")[0]
		}
		h := holder("s1")
		for i := range 8 {
			out, err := q.Do(ctx, Job{Session: "s1", Payload: fmt.Appendf(nil, "echo:%d", i)})
			if err != nil || !strings.HasPrefix(string(out), h+":") {
				t.Fatalf("session job %d: %q, %v (holder %s)", i, out, err, h)
			}
		}
		if _, err := q.Do(ctx, Job{Session: "s1", Payload: []byte("close:s1")}); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Do(ctx, Job{Session: "s1", Payload: []byte("echo:x")}); !errors.Is(err, ErrSessionLost) || !errors.Is(err, ErrNotStarted) {
			t.Fatalf("after close: err = %v", err)
		}
		h = holder("s2")
		stops[h]()
		if _, err := q.Do(ctx, Job{Session: "s2", Payload: []byte("echo:x")}); !errors.Is(err, ErrSessionLost) || !errors.Is(err, ErrNotStarted) {
			t.Fatalf("after holder stopped: err = %v", err)
		}
	})

	t.Run("OnStopRunsOnceAtShutdown", func(t *testing.T) {
		q := newQ(t, contractConfig(), nil)
		calls := make(chan struct{}, 2)
		stop := runWorker(t, q, WorkerConfig{ID: "w1", Concurrency: 1, OnStop: func() { calls <- struct{}{} }}, testHandler("w1", func(Job) {}))
		if _, err := q.Do(testCtx(t), Job{Payload: []byte("echo:x")}); err != nil {
			t.Fatal(err)
		}
		if len(calls) != 0 {
			t.Fatal("OnStop ran before the worker stopped")
		}
		stop()
		if len(calls) != 1 {
			t.Fatalf("OnStop ran %d times at shutdown, want 1", len(calls))
		}
	})

	t.Run("GracefulShutdownFinishesInFlight", func(t *testing.T) {
		q := newQ(t, contractConfig(), nil)
		started := make(chan struct{}, 1)
		stop := runWorker(t, q, WorkerConfig{Grace: waitTimeout}, HandlerFunc(func(ctx context.Context, j Job) (Reply, error) {
			started <- struct{}{}
			time.Sleep(300 * time.Millisecond) // finishes despite shutdown
			return Reply{Payload: []byte("finished")}, nil
		}))
		res := doAsync(testCtx(t), q, Job{})
		recv(t, started, "start")
		stop()
		if r := recv(t, res, "result"); r.err != nil || string(r.out) != "finished" {
			t.Fatalf("Do = %q, %v", r.out, r.err)
		}
	})

	t.Run("GraceExpiredJobMovesToAnotherWorker", func(t *testing.T) {
		q := newQ(t, contractConfig(), nil)
		started, cause := make(chan struct{}, 1), make(chan error, 1)
		stop := runWorker(t, q, WorkerConfig{ID: "w1", Grace: 100 * time.Millisecond}, HandlerFunc(func(ctx context.Context, j Job) (Reply, error) {
			started <- struct{}{}
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return Reply{Payload: []byte("w1 must not answer")}, nil
		}))
		res := doAsync(testCtx(t), q, Job{})
		recv(t, started, "start on w1")
		stop()
		if c := recv(t, cause, "w1 cancellation"); !errors.Is(c, errShutdown) {
			t.Fatalf("cause = %v", c)
		}
		runWorker(t, q, WorkerConfig{ID: "w2"}, testHandler("w2", func(Job) {}))
		// The payload is empty: testHandler fails it, which is fine; what
		// matters is that w2 answered, on a second attempt.
		r := recv(t, res, "result")
		if !errors.Is(r.err, ErrJobFailed) || !strings.Contains(r.err.Error(), "unknown command") {
			t.Fatalf("Do = %q, %v", r.out, r.err)
		}
	})

	t.Run("SameIDRunsOnce", func(t *testing.T) {
		q := newQ(t, contractConfig(), nil)
		var runs atomic.Int32
		release := make(chan struct{})
		runWorker(t, q, WorkerConfig{Concurrency: 2}, HandlerFunc(func(ctx context.Context, j Job) (Reply, error) {
			runs.Add(1)
			<-release
			return Reply{Payload: []byte("once")}, nil
		}))
		ctx := testCtx(t)
		a := doAsync(ctx, q, Job{ID: "same"})
		b := doAsync(ctx, q, Job{ID: "same"})
		time.Sleep(100 * time.Millisecond) // let both submit; either order is fine
		close(release)
		for _, ch := range []<-chan result{a, b} {
			if r := recv(t, ch, "result"); r.err != nil || string(r.out) != "once" {
				t.Fatalf("Do = %q, %v", r.out, r.err)
			}
		}
		if out, err := q.Do(ctx, Job{ID: "same"}); err != nil || string(out) != "once" {
			t.Fatalf("stored outcome: %q, %v", out, err)
		}
		if n := runs.Load(); n != 1 {
			t.Fatalf("handler ran %d times", n)
		}
	})

	runLaneContract(t, newQ)
	runReserveContract(t, newQ)

	t.Run("Closed", func(t *testing.T) {
		q := newQ(t, contractConfig(), nil)
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Do(testCtx(t), Job{}); !errors.Is(err, ErrClosed) {
			t.Fatalf("err = %v", err)
		}
	})
}

// waitGauge waits until the named gauge in reg reads want.
func waitGauge(t *testing.T, reg *prometheus.Registry, name string, want float64) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	var last float64
	for time.Now().Before(deadline) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name && len(mf.GetMetric()) > 0 {
				last = mf.GetMetric()[0].GetGauge().GetValue()
				if last == want {
					return
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s = %v, want %v", name, last, want)
}
