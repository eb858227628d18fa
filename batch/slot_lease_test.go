package batch

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// takeCounter counts the owner-slot records created in a store (one per
// slot taken).
type takeCounter struct {
	state.Store
	takes atomic.Int64
}

func (c *takeCounter) Put(ctx context.Context, k state.Key, v []byte, o state.PutOptions) (int64, error) {
	if k.Kind == kindSlot && o.IfVersion == -1 {
		c.takes.Add(1)
	}
	return c.Store.Put(ctx, k, v, o)
}

// TestSlotKeptAcrossItems: a runner goroutine keeps its owner slot across
// the items it runs back to back, so 60 quick items at concurrency 2 take
// a handful of slots, not 60 (each take and release is a store write);
// the owner cap still holds and every slot is released at the end.
func TestSlotKeptAcrossItems(t *testing.T) {
	st := &takeCounter{Store: state.NewMemory(time.Now)}
	d := &peakDispatcher{delay: time.Millisecond}
	m, err := New(Config{LeaseTTL: time.Second, OwnerConcurrency: 2}, st, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b, err := m.Create(ctx, "alice", Spec{Items: items(60, func(int) string { return `{"code":"x"}` }), Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	b = waitStatus(t, m, "alice", b.ID, wire.BatchCompleted)
	if b.RequestCounts.Completed != 60 || d.calls.Load() != 60 {
		t.Fatalf("counts %+v, %d calls", b.RequestCounts, d.calls.Load())
	}
	// Two goroutines, each re-taking its slot at most every slotKeep and
	// after an idle wait for work (the feeder can fall behind under -race
	// on a loaded machine: CI once saw 9): a few takes per goroutine, far
	// from the 60 of a slot per item.
	max := 2 * (8 + int64(time.Since(start)/(2*time.Second)))
	if n := st.takes.Load(); n > max {
		t.Fatalf("%d slot takes for 60 items, want at most %d", n, max)
	}
	if p := d.peak.Load(); p > 2 {
		t.Fatalf("owner cap 2 exceeded: peak %d", p)
	}
	if n, err := m.slots.inUse(ctx, "alice"); err != nil || n != 0 {
		t.Fatalf("%d slots still held (%v)", n, err)
	}
}
