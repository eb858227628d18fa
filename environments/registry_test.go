package environments

import (
	"context"
	"errors"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// TestRegistry: records are created once, then compare-and-swapped; a
// build's events come back in order after a seq.
func TestRegistry(t *testing.T) {
	ctx := context.Background()
	r := NewRegistry(state.NewMemory(nil))
	v, err := r.Put(ctx, Record{Name: "a", Status: StatusBuilding}, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Put(ctx, Record{Name: "a"}, -1); !errors.Is(err, core.ErrConflict) {
		t.Errorf("create twice: %v", err)
	}
	if _, err := r.Put(ctx, Record{Name: "a", Status: StatusReady}, v); err != nil {
		t.Errorf("compare and swap: %v", err)
	}
	if _, err := r.Put(ctx, Record{Name: "a"}, v); !errors.Is(err, core.ErrConflict) {
		t.Errorf("stale version: %v", err)
	}
	for _, ev := range []Event{{Type: EventStep, Step: "apt"}, {Type: EventDone}} {
		if err := r.AppendEvent(ctx, "a", "b1", ev); err != nil {
			t.Fatal(err)
		}
	}
	evs, seqs, err := r.Events(ctx, "a", "b1", 1, 10, 0)
	if err != nil || len(evs) != 1 || evs[0].Type != EventDone || seqs[0] != 2 {
		t.Errorf("events %v %v %v", evs, seqs, err)
	}
}
