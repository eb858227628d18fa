package batch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// unindexGate holds every removal of a batch from the index of unfinished
// batches until open is closed, signalling held first: the runner that
// finished the batch stays in its last step, as a runner descheduled on a
// busy machine does.
type unindexGate struct {
	state.Store
	held chan struct{}
	open chan struct{}
}

func (g *unindexGate) Delete(ctx context.Context, k state.Key, ifVersion int64) error {
	if k.Kind == kindIndex {
		select {
		case g.held <- struct{}{}:
		default:
		}
		<-g.open
	}
	return g.Store.Delete(ctx, k, ifVersion)
}

// TestRetryWhileTheRunnerFinishes: a batch retried while the runner that
// finished it has not yet returned (here held in its last step, as on a
// busy machine) is run again, and stays in the index of unfinished
// batches meanwhile. It was lost: the retry's kick found the old runner
// still registered and did nothing, the old runner then removed the index
// entry the retry had written, and the batch stayed in_progress with no
// runner (issue 26: a one-item batch in_progress after 20 s under load).
func TestRetryWhileTheRunnerFinishes(t *testing.T) {
	st := &unindexGate{Store: state.NewMemory(time.Now), held: make(chan struct{}, 1), open: make(chan struct{})}
	m, _ := New(Config{LeaseTTL: time.Second}, st, &recordingDispatcher{}, nil)
	ctx := context.Background()
	b, err := m.Create(ctx, "alice", Spec{Items: items(1, func(int) string { return `{}` })})
	if err != nil {
		t.Fatal(err)
	}
	waitSignal(t, st.held, "the runner never reached its last step")
	if got, _ := m.Get(ctx, "alice", b.ID); got.Status != wire.BatchCompleted {
		t.Fatalf("batch %s before the retry, want completed", got.Status)
	}
	failFirstItem(t, m, "alice", b.ID)
	if _, err := m.Retry(ctx, "alice", b.ID); err != nil {
		t.Fatal(err)
	}
	close(st.open)
	got := waitStatus(t, m, "alice", b.ID, wire.BatchCompleted)
	if got.Attempt != 1 {
		t.Fatalf("batch completed at retry %d, want the first retry's", got.Attempt)
	}
	lines, _ := m.Results(ctx, "alice", b.ID)
	if l := lineOf(t, lines, "item-0"); l.Attempt != 2 || l.Status == "failed" {
		t.Fatalf("line after the retry: %+v", l)
	}
	// Finished, it leaves the index; so does the first runner's late step.
	deadline := time.Now().Add(testscale.D(5 * time.Second))
	for {
		_, err := st.Get(ctx, state.Key{Kind: kindIndex, ID: b.ID})
		if errors.Is(err, state.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the finished batch is still indexed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// heldDispatcher answers ok once open is closed, signalling started first.
type heldDispatcher struct {
	started chan struct{}
	open    chan struct{}
}

func (d *heldDispatcher) Run(ctx context.Context, _ dispatcher.Call) dispatcher.Result {
	select {
	case d.started <- struct{}{}:
	default:
	}
	select {
	case <-d.open:
	case <-ctx.Done():
	}
	return dispatcher.Result{Status: dispatcher.StatusOK, Sandbox: &core.Result{}}
}

// TestRetryOnAnotherReplicaStaysIndexed: a batch retried on another
// replica while the runner that finished it on the first has not yet
// returned stays in the index of unfinished batches (which any replica
// resumes from after a crash) while the retry runs: the first runner's
// late removal deletes only the index entry it saw while the batch was
// final.
func TestRetryOnAnotherReplicaStaysIndexed(t *testing.T) {
	st := &unindexGate{Store: state.NewMemory(time.Now), held: make(chan struct{}, 1), open: make(chan struct{})}
	m1, _ := New(Config{Replica: "r1", LeaseTTL: time.Second}, st, &recordingDispatcher{}, nil)
	d2 := &heldDispatcher{started: make(chan struct{}, 1), open: make(chan struct{})}
	m2, _ := New(Config{Replica: "r2", LeaseTTL: time.Second}, st, d2, nil)
	ctx := context.Background()
	b, err := m1.Create(ctx, "alice", Spec{Items: items(1, func(int) string { return `{}` })})
	if err != nil {
		t.Fatal(err)
	}
	waitSignal(t, st.held, "the first runner never reached its last step")
	failFirstItem(t, m1, "alice", b.ID)
	if _, err := m2.Retry(ctx, "alice", b.ID); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, d2.started, "the retry never ran on the second replica")
	close(st.open) // the first runner's removal goes ahead now
	deadline := time.Now().Add(testscale.D(10 * time.Second))
	for {
		m1.mu.Lock()
		n := len(m1.active)
		m1.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first runner did not return")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := st.Get(ctx, state.Key{Kind: kindIndex, ID: b.ID}); err != nil {
		t.Fatalf("the retried batch left the index while it runs: %v", err)
	}
	close(d2.open)
	waitStatus(t, m2, "alice", b.ID, wire.BatchCompleted)
}

// failFirstItem records the first item of batch id as failed, as a run
// whose call failed would, so that Retry reruns it.
func failFirstItem(t *testing.T, m *Manager, owner, id string) {
	t.Helper()
	ctx := context.Background()
	it, err := m.items(ctx, owner, id)
	if err != nil || len(it) == 0 {
		t.Fatalf("items of %s: %d, %v", id, len(it), err)
	}
	failed := it[0].item
	failed.Status = ItemFailed
	if err := m.putItem(ctx, owner, id, &failed, it[0].version); err != nil {
		t.Fatal(err)
	}
}

// waitSignal waits for ch, failing the test with what after a while.
func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testscale.D(10 * time.Second)):
		t.Fatal(what)
	}
}
