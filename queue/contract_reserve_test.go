package queue

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// reserveHandler runs the reserve contract's jobs: a payload "hold:X"
// reports X on started and blocks until release gets a value (or ctx
// ends); other payloads report on started and return at once. It counts
// the batch-lane jobs running at once and their maximum.
type reserveHandler struct {
	started chan string
	release chan struct{}
	batch   atomic.Int64 // batch-lane jobs in the handler now
	maxSeen atomic.Int64 // the most of them at once
}

func newReserveHandler() *reserveHandler {
	return &reserveHandler{started: make(chan string, 64), release: make(chan struct{})}
}

// Handle implements Handler.
func (h *reserveHandler) Handle(ctx context.Context, j Job) (Reply, error) {
	if j.Lane == LaneBatch {
		n := h.batch.Add(1)
		defer h.batch.Add(-1)
		for m := h.maxSeen.Load(); n > m && !h.maxSeen.CompareAndSwap(m, n); m = h.maxSeen.Load() {
		}
	}
	p := string(j.Payload)
	if x, ok := strings.CutPrefix(p, "hold:"); ok {
		h.started <- x
		select {
		case <-h.release:
		case <-ctx.Done():
			return Reply{}, ctx.Err()
		}
		return Reply{Payload: []byte(x)}, nil
	}
	h.started <- p
	return Reply{Payload: j.Payload}, nil
}

// runReserveContract checks WorkerConfig.InteractiveReserve on every
// Queue implementation: slots only interactive and session jobs use.
func runReserveContract(t *testing.T, newQ newQueueFunc) {
	t.Run("ReserveStartsInteractiveBesideFullBatch", func(t *testing.T) {
		q := newQ(t, contractConfig(), nil)
		h := newReserveHandler()
		runWorker(t, q, WorkerConfig{Concurrency: 1, InteractiveReserve: 1}, h)
		ctx := testCtx(t)
		var batch []<-chan result
		for i := range 3 {
			batch = append(batch, doAsync(ctx, q, Job{Lane: LaneBatch, Owner: "bulk", Payload: fmt.Appendf(nil, "hold:b%d", i)}))
		}
		first := recv(t, h.started, "the first batch job")
		// The batch job holds the only normal slot; the interactive job
		// must start in the reserve slot and finish while it is held.
		if out, err := q.Do(ctx, Job{Owner: "user", Payload: []byte("i")}); err != nil || string(out) != "i" {
			t.Fatalf("interactive job beside a held batch job: %q, %v", out, err)
		}
		if got := recv(t, h.started, "the interactive job's start"); got != "i" {
			t.Fatalf("started %q while batch job %s held the only batch slot, want only the interactive job", got, first)
		}
		if n := h.batch.Load(); n != 1 {
			t.Fatalf("%d batch jobs running beside the interactive one, want 1 (still held)", n)
		}
		seen := map[string]bool{first: true}
		for range 2 { // each release lets exactly the next batch job start
			h.release <- struct{}{}
			x := recv(t, h.started, "the next batch job")
			if seen[x] {
				t.Fatalf("batch job %s started twice", x)
			}
			seen[x] = true
		}
		h.release <- struct{}{}
		for _, ch := range batch {
			if r := recv(t, ch, "a batch job"); r.err != nil {
				t.Fatal(r.err)
			}
		}
		if m := h.maxSeen.Load(); m != 1 {
			t.Fatalf("%d batch jobs ran at once with Concurrency 1, want 1 (the reserve is not for batch jobs)", m)
		}
	})

	t.Run("ReserveServesSessionJobs", func(t *testing.T) {
		q := newQ(t, contractConfig(), nil)
		h := newReserveHandler()
		runWorker(t, q, WorkerConfig{Concurrency: 1, InteractiveReserve: 1}, HandlerFunc(func(ctx context.Context, j Job) (Reply, error) {
			if string(j.Payload) == "open" {
				return Reply{Payload: []byte("opened"), BindSession: "s1"}, nil
			}
			return h.Handle(ctx, j)
		}))
		ctx := testCtx(t)
		if _, err := q.Do(ctx, Job{Owner: "user", Payload: []byte("open")}); err != nil {
			t.Fatal(err)
		}
		held := doAsync(ctx, q, Job{Lane: LaneBatch, Owner: "bulk", Payload: []byte("hold:b")})
		recv(t, h.started, "the batch job")
		// A session job rides the reserve too, whatever its lane.
		if out, err := q.Do(ctx, Job{Owner: "user", Session: "s1", Lane: LaneBatch, Payload: []byte("s")}); err != nil || string(out) != "s" {
			t.Fatalf("session job beside a held batch job: %q, %v", out, err)
		}
		recv(t, h.started, "the session job's start")
		h.release <- struct{}{}
		if r := recv(t, held, "the batch job"); r.err != nil {
			t.Fatal(r.err)
		}
	})

	t.Run("NoReserveInteractiveWaitsForBatch", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		q := newQ(t, contractConfig(), reg)
		h := newReserveHandler()
		runWorker(t, q, WorkerConfig{Concurrency: 1, InteractiveReserve: -1}, h)
		ctx := testCtx(t)
		b0 := doAsync(ctx, q, Job{Lane: LaneBatch, Owner: "bulk", Payload: []byte("hold:b0")})
		recv(t, h.started, "the batch job")
		inter := doAsync(ctx, q, Job{Owner: "user", Payload: []byte("i")})
		b1 := doAsync(ctx, q, Job{Lane: LaneBatch, Owner: "bulk", Payload: []byte("b1")})
		waitGauge(t, reg, "airlock_queue_depth", 3)
		// Nothing may start while the batch job holds the only slot; a
		// wrong start would show within this wait (it cannot fail falsely).
		select {
		case x := <-h.started:
			t.Fatalf("%q started while the only slot was held (InteractiveReserve < 0 means no reserve)", x)
		case <-time.After(300 * time.Millisecond):
		}
		h.release <- struct{}{}
		if r := recv(t, b0, "the batch job"); r.err != nil {
			t.Fatal(r.err)
		}
		// The freed slot goes to the waiting interactive job first.
		if x := recv(t, h.started, "the next job"); x != "i" {
			t.Fatalf("after the batch job, %q started first, want the interactive job", x)
		}
		recv(t, h.started, "the second batch job")
		for _, ch := range []<-chan result{inter, b1} {
			if r := recv(t, ch, "a job"); r.err != nil {
				t.Fatal(r.err)
			}
		}
	})

	t.Run("ReserveKeepsBatchThroughput", func(t *testing.T) {
		q := newQ(t, contractConfig(), nil)
		var running, maxSeen atomic.Int64
		both := make(chan struct{}) // closed once two batch jobs run at once
		var once sync.Once
		runWorker(t, q, WorkerConfig{Concurrency: 2, InteractiveReserve: 1}, HandlerFunc(func(ctx context.Context, j Job) (Reply, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for m := maxSeen.Load(); n > m && !maxSeen.CompareAndSwap(m, n); m = maxSeen.Load() {
			}
			if n >= 2 {
				once.Do(func() { close(both) })
			}
			// Every job waits until two have run at once, so the run
			// shows both batch slots in use.
			select {
			case <-both:
			case <-ctx.Done():
				return Reply{}, ctx.Err()
			}
			return Reply{Payload: j.Payload}, nil
		}))
		ctx := testCtx(t)
		start := time.Now()
		var rs []<-chan result
		for i := range 20 {
			rs = append(rs, doAsync(ctx, q, Job{Lane: LaneBatch, Payload: fmt.Appendf(nil, "%d", i)}))
		}
		for i, ch := range rs {
			if r := recv(t, ch, "batch job"); r.err != nil || string(r.out) != fmt.Sprint(i) {
				t.Fatalf("batch job %d: %q, %v", i, r.out, r.err)
			}
		}
		if el := time.Since(start); el > testscale.D(10*time.Second) {
			t.Fatalf("20 no-op batch jobs took %v, want well under 10s", el)
		}
		if m := maxSeen.Load(); m != 2 {
			t.Fatalf("at most %d batch jobs ran at once with Concurrency 2 and a reserve of 1, want exactly 2", m)
		}
	})
}
