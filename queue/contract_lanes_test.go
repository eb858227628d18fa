package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// runLaneContract is the lane behaviour every Queue implementation must
// show (issue 14, "Fair").
func runLaneContract(t *testing.T, newQ newQueueFunc) {
	t.Run("InteractiveBeforeQueuedBatch", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		q := newQ(t, contractConfig(), reg)
		started, release := make(chan struct{}, 1), make(chan struct{})
		var mu sync.Mutex
		var order []string
		// No reserve: one slot in all, so the run order is the lanes' alone.
		runWorker(t, q, WorkerConfig{Concurrency: 1, InteractiveReserve: -1}, HandlerFunc(func(ctx context.Context, j Job) (Reply, error) {
			if string(j.Payload) == "hold" {
				started <- struct{}{}
				<-release
			}
			mu.Lock()
			order = append(order, fmt.Sprintf("%s/%s", j.Lane, j.Payload))
			mu.Unlock()
			return Reply{Payload: j.Payload}, nil
		}))
		ctx := testCtx(t)
		held := doAsync(ctx, q, Job{Payload: []byte("hold")})
		recv(t, started, "the job holding the only slot")
		const n = 6
		var batch []<-chan result
		for i := range n { // one at a time, so the lane's order is known
			batch = append(batch, doAsync(ctx, q, Job{Lane: LaneBatch, Owner: "bulk", Payload: fmt.Appendf(nil, "b%d", i)}))
			waitGauge(t, reg, "airlock_queue_depth", float64(2+i))
		}
		inter := doAsync(ctx, q, Job{Owner: "user", Payload: []byte("i")})
		waitGauge(t, reg, "airlock_queue_depth", 2+n)
		close(release)
		for _, ch := range append([]<-chan result{held, inter}, batch...) {
			if r := recv(t, ch, "a job"); r.err != nil {
				t.Fatal(r.err)
			}
		}
		want := []string{"/hold", "/i"}
		for i := range n {
			want = append(want, fmt.Sprintf("batch/b%d", i))
		}
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(order) != fmt.Sprint(want) {
			t.Fatalf("run order %v, want %v (interactive first, then every batch job in order)", order, want)
		}
	})

	t.Run("BatchRunsWhenInteractiveIdle", func(t *testing.T) {
		q := newQ(t, contractConfig(), nil)
		runWorker(t, q, WorkerConfig{Concurrency: 2}, HandlerFunc(func(ctx context.Context, j Job) (Reply, error) {
			return Reply{Payload: append([]byte("re:"), j.Payload...)}, nil
		}))
		ctx := testCtx(t)
		var rs []<-chan result
		for i := range 20 {
			rs = append(rs, doAsync(ctx, q, Job{Lane: LaneBatch, Payload: fmt.Appendf(nil, "%d", i)}))
		}
		for i, ch := range rs {
			if r := recv(t, ch, "batch job"); r.err != nil || string(r.out) != fmt.Sprintf("re:%d", i) {
				t.Fatalf("batch job %d: %q, %v", i, r.out, r.err)
			}
		}
	})

	t.Run("PerOwnerLimitSpansLanes", func(t *testing.T) {
		cfg := contractConfig()
		cfg.MaxPerOwner = 2
		q := newQ(t, cfg, nil)
		started, release := make(chan struct{}, 2), make(chan struct{})
		runWorker(t, q, WorkerConfig{Concurrency: 3}, HandlerFunc(func(ctx context.Context, j Job) (Reply, error) {
			if string(j.Payload) == "hold" {
				started <- struct{}{}
				<-release
			}
			return Reply{Payload: []byte("done")}, nil
		}))
		ctx := testCtx(t)
		a1 := doAsync(ctx, q, Job{Owner: "a", Lane: LaneBatch, Payload: []byte("hold")})
		a2 := doAsync(ctx, q, Job{Owner: "a", Payload: []byte("hold")})
		recv(t, started, "first job")
		recv(t, started, "second job")
		for _, l := range []Lane{LaneInteractive, LaneBatch} {
			if _, err := q.Do(ctx, Job{Owner: "a", Lane: l}); !errors.Is(err, ErrBusy) {
				t.Fatalf("third job of owner a in lane %q: err = %v, want ErrBusy", l, err)
			}
		}
		if out, err := q.Do(ctx, Job{Owner: "b", Lane: LaneBatch}); err != nil || string(out) != "done" {
			t.Fatalf("owner b: %q, %v", out, err)
		}
		close(release)
		for _, ch := range []<-chan result{a1, a2} {
			if r := recv(t, ch, "held job"); r.err != nil {
				t.Fatal(r.err)
			}
		}
	})

	t.Run("UnknownLaneRefused", func(t *testing.T) {
		q := newQ(t, contractConfig(), nil)
		if _, err := q.Do(testCtx(t), Job{Lane: "urgent"}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("err = %v, want ErrInvalid", err)
		}
	})
}
