package batch

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// stuckRuns starts runs that never end by themselves; Cancel ends them,
// and a run it forgot answers not found.
type stuckRuns struct {
	mu        sync.Mutex
	n         int
	status    map[string]wire.RunStatus
	forget    bool
	cancelled []string
}

func (f *stuckRuns) Start(agent.RunRequest) (wire.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	id := fmt.Sprintf("run_%d", f.n)
	f.status[id] = wire.RunRunning
	return wire.Run{ID: id, Status: wire.RunRunning}, nil
}

func (f *stuckRuns) Get(_, id string) (wire.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.status[id]
	if !ok || f.forget {
		return wire.Run{}, core.E("agent", core.ErrNotFound, fmt.Errorf("run %s not found", id))
	}
	return wire.Run{ID: id, Status: st}, nil
}

func (f *stuckRuns) Cancel(_, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancelled = append(f.cancelled, id)
	f.status[id] = wire.RunCancelled
	return nil
}

func (f *stuckRuns) started() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// TestCancelStopsItemRuns: cancelling a batch whose run items are in
// flight cancels their agent runs (not left running unowned), and a run
// that is no longer stored fails its item instead of holding it forever.
func TestCancelStopsItemRuns(t *testing.T) {
	ctx := context.Background()
	runs := &stuckRuns{status: map[string]wire.RunStatus{}}
	m, _ := New(Config{LeaseTTL: time.Second}, state.NewMemory(time.Now), &peakDispatcher{}, runs)
	spec := Spec{Concurrency: 2, Items: []Item{{CustomID: "a", Run: &agent.RunRequest{Goal: "x"}}, {CustomID: "b", Run: &agent.RunRequest{Goal: "y"}}}}
	b, err := m.Create(ctx, "alice", spec)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(testscale.D(10 * time.Second)); runs.started() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d runs started, want 2", runs.started())
		}
	}
	if _, err := m.Cancel(ctx, "alice", b.ID); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, m, "alice", b.ID, wire.BatchCancelled)
	runs.mu.Lock()
	cancelled := len(runs.cancelled)
	runs.mu.Unlock()
	if cancelled != 2 {
		t.Fatalf("%d of the items' 2 runs cancelled (%v)", cancelled, runs.cancelled)
	}

	runs.mu.Lock()
	runs.forget = true
	runs.mu.Unlock()
	b, err = m.Create(ctx, "alice", Spec{Items: []Item{{CustomID: "lost", Run: &agent.RunRequest{Goal: "z"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if b = waitStatus(t, m, "alice", b.ID, wire.BatchCompleted); b.RequestCounts.Failed != 1 {
		t.Fatalf("counts %+v, want the lost run's item failed", b.RequestCounts)
	}
	lines, _ := m.Results(ctx, "alice", b.ID)
	if l := lineOf(t, lines, "lost"); l.Error == nil || l.Error.Code != string(core.ErrNotFound) {
		t.Fatalf("line %+v", l)
	}
}
