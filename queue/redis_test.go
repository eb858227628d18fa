package queue

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// testLogger sends logs to the test log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// testWriter adapts testing.TB to io.Writer.
type testWriter struct{ t testing.TB }

// Write logs p.
func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// queueSeq names each test's queue uniquely on a shared server.
var queueSeq atomic.Int64

// TestRedisContract runs the contract suite on the Redis queue, each test
// on its own queue name (hence its own keys) of one redis-server.
func TestRedisContract(t *testing.T) {
	srv := redistest.Start(t, false)
	runContract(t, func(t *testing.T, cfg Config, reg prometheus.Registerer) Queue {
		cfg.RedisURL = srv.URL()
		cfg.Name = fmt.Sprintf("contract%d", queueSeq.Add(1))
		q, err := NewRedis(cfg, Deps{Registerer: reg, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Close() })
		return q
	})
}

// TestRedisLiveWorkers: readiness can see whether any worker is alive.
func TestRedisLiveWorkers(t *testing.T) {
	srv := redistest.Start(t, false)
	q, err := NewRedis(Config{RedisURL: srv.URL(), Name: "live", LivenessTTL: time.Second}, Deps{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()
	if n, err := q.LiveWorkers(ctx); err != nil || n != 0 {
		t.Fatalf("before any worker: %d %v", n, err)
	}
	w, err := q.NewWorker(WorkerConfig{}, HandlerFunc(func(context.Context, Job) (Reply, error) { return Reply{}, nil }))
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(wctx) }()
	waitFor(t, func() bool { n, _ := q.LiveWorkers(ctx); return n == 1 })
	stop()
	<-done
	waitFor(t, func() bool { n, _ := q.LiveWorkers(ctx); return n == 0 })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testscale.D(time.Minute))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startedProbe is a slog handler that, when the worker logs "worker
// started", counts the live workers right then.
type startedProbe struct {
	slog.Handler
	q    *Redis
	seen chan int
}

// WithAttrs keeps the probe on derived loggers.
func (h *startedProbe) WithAttrs([]slog.Attr) slog.Handler { return h }

// Handle probes LiveWorkers on the "worker started" record.
func (h *startedProbe) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "worker started" {
		n, _ := h.q.LiveWorkers(context.Background())
		h.seen <- n
	}
	return nil
}

// TestRedisLiveBeforeStartedLog: a readiness check made once the worker
// has logged "worker started" sees it live (the first beat comes first;
// e2e's replicas test read /readyz right after the line and got 503).
func TestRedisLiveBeforeStartedLog(t *testing.T) {
	srv := redistest.Start(t, false)
	probe := &startedProbe{Handler: slog.NewTextHandler(testWriter{t}, nil), seen: make(chan int, 1)}
	q, err := NewRedis(Config{RedisURL: srv.URL(), Name: "livelog", LivenessTTL: time.Minute}, Deps{Logger: slog.New(probe)})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	probe.q = q
	w, err := q.NewWorker(WorkerConfig{}, HandlerFunc(func(context.Context, Job) (Reply, error) { return Reply{}, nil }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	defer func() { stop(); <-done }()
	select {
	case n := <-probe.seen:
		if n != 1 {
			t.Fatalf("live workers when \"worker started\" was logged: %d, want 1", n)
		}
	case <-time.After(testscale.D(time.Minute)):
		t.Fatal("the worker never logged \"worker started\"")
	}
}
