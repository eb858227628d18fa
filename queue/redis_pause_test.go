package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// TestRedisPausedRetrySameIDRunsOnce: Redis stopped (SIGSTOP) 15 s while a
// client submits and, on every ErrUnavailable, retries with the same job
// id (as jobs.Client does for one IdempotencyKey): the job runs exactly
// once and the retrying client gets its result.
func TestRedisPausedRetrySameIDRunsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test: -short")
	}
	srv := redistest.Start(t, false)
	rdb := srv.Client(t)
	ctx := context.Background()
	info := rdb.Info(ctx, "server").Val()
	_, rest, _ := strings.Cut(info, "process_id:")
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]))
	if err != nil {
		t.Fatalf("redis pid: %v", err)
	}
	q, err := NewRedis(Config{RedisURL: srv.URL(), Name: fmt.Sprintf("pause%d", queueSeq.Add(1))}, Deps{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var runs atomic.Int64
	w, err := q.NewWorker(WorkerConfig{Concurrency: 2, ReadBlock: 200 * time.Millisecond}, HandlerFunc(
		func(_ context.Context, j Job) (Reply, error) { runs.Add(1); return Reply{Payload: []byte("done")}, nil }))
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(wctx) }()
	defer func() { stop(); <-done }()
	if _, err := q.Do(ctx, Job{Payload: []byte("warm")}); err != nil {
		t.Fatal(err)
	}
	runs.Store(0)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := time.AfterFunc(15*time.Second, func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	defer func() { resumed.Stop(); _ = syscall.Kill(pid, syscall.SIGCONT) }()
	refused := 0
	var out []byte
	for deadline := time.Now().Add(testscale.D(40 * time.Second)); ; {
		cctx, cancel := context.WithTimeout(ctx, testscale.D(30*time.Second))
		out, err = q.Do(cctx, Job{ID: "retry-1", Payload: []byte("x")})
		cancel()
		if !errors.Is(err, ErrUnavailable) || time.Now().After(deadline) {
			break
		}
		refused++
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil || string(out) != "done" {
		t.Fatalf("after %d refusals: %q, %v", refused, out, err)
	}
	time.Sleep(2 * time.Second) // a second execution would show by now
	if n := runs.Load(); n != 1 {
		t.Fatalf("job ran %d times after %d refused submits, want exactly once", n, refused)
	}
	t.Logf("%d submits refused while Redis was stopped; one execution", refused)
}

// TestRedisRependSkipsJustRead: after a failed read, the worker looks at
// its own pending entries; an entry its next read just delivered is
// pending too, and must come back once, not also as a recovered copy that
// would run the job a second time once the first run finished.
func TestRedisRependSkipsJustRead(t *testing.T) {
	srv := redistest.Start(t, false)
	ctx := context.Background()
	q, err := NewRedis(Config{RedisURL: srv.URL(), Name: fmt.Sprintf("repend%d", queueSeq.Add(1))}, Deps{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	wk, err := q.NewWorker(WorkerConfig{Concurrency: 2, ReadBlock: 50 * time.Millisecond}, HandlerFunc(
		func(context.Context, Job) (Reply, error) { return Reply{}, nil }))
	if err != nil {
		t.Fatal(err)
	}
	w := wk.(*redisWorker)
	if err := w.createGroups(ctx); err != nil {
		t.Fatal(err)
	}
	sub, err := q.submit(ctx, Job{ID: "fresh-1", Lane: LaneInteractive, Payload: []byte("x"), Deadline: time.Now().Add(time.Minute)})
	if err != nil || sub.kind != "ok" {
		t.Fatalf("submit: %+v, %v", sub, err)
	}
	w.repend = true // as after a read that failed client-side
	nextClaim := time.Now().Add(time.Hour)
	ds, err := w.collect(ctx, 2, &nextClaim)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range ds {
		if d.msg.ID == sub.entry {
			n++
		}
	}
	if n != 1 || len(ds) != 1 {
		t.Fatalf("collect returned entry %s %d times in %d deliveries, want once", sub.entry, n, len(ds))
	}
	if w.repend {
		t.Fatal("repend still set after the look at pending entries")
	}
}
