package environments

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/state"
)

// TestRegistry runs the registry on every state backend: Memory, Bolt and
// (not under -short) a real Redis.
func TestRegistry(t *testing.T) {
	t.Run("memory", func(t *testing.T) { testRegistry(t, state.NewMemory(nil)) })
	t.Run("bolt", func(t *testing.T) {
		b, err := state.OpenBolt(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		testRegistry(t, b)
	})
	t.Run("redis", func(t *testing.T) {
		if testing.Short() {
			t.Skip("a redis-server process: not under -short")
		}
		testRegistry(t, state.NewRedis(redistest.Start(t, false).Client(t), "envtest:"))
	})
}

// testRegistry: records are created once, then compare-and-swapped; List
// pages through every record by name; a build's events come back in order
// after a seq; a deleted record is not found, naming it.
func testRegistry(t *testing.T, st state.Store) {
	ctx := context.Background()
	r := NewRegistry(st)
	v, err := r.Put(ctx, Record{Name: "a", Status: StatusBuilding}, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Put(ctx, Record{Name: "a"}, -1); !errors.Is(err, core.ErrConflict) {
		t.Errorf("create twice: %v", err)
	}
	if _, err := r.Put(ctx, Record{Name: "a", Status: StatusReady, Spec: &Spec{Name: "a", Base: Python, Apt: []string{"tree"}}}, v); err != nil {
		t.Errorf("compare and swap: %v", err)
	}
	if _, err := r.Put(ctx, Record{Name: "a"}, v); !errors.Is(err, core.ErrConflict) {
		t.Errorf("stale version: %v", err)
	}
	got, _, err := r.Get(ctx, "a")
	if err != nil || got.Status != StatusReady || got.Spec == nil || got.Spec.Apt[0] != "tree" {
		t.Errorf("get: %+v %v", got, err)
	}
	for i := 0; i < 130; i++ { // more than one page
		if _, err := r.Put(ctx, Record{Name: fmt.Sprintf("e%03d", i)}, -1); err != nil {
			t.Fatal(err)
		}
	}
	list, err := r.List(ctx)
	if err != nil || len(list) != 131 || list[0].Name != "a" || list[130].Name != "e129" {
		t.Errorf("list: %d records, %v", len(list), err)
	}
	for _, ev := range []Event{{Type: EventStep, Step: StepApt}, {Type: EventDone}} {
		if err := r.AppendEvent(ctx, "a", "b1", ev); err != nil {
			t.Fatal(err)
		}
	}
	evs, seqs, err := r.Events(ctx, "a", "b1", 1, 10, 0)
	if err != nil || len(evs) != 1 || evs[0].Type != EventDone || seqs[0] != 2 {
		t.Errorf("events %v %v %v", evs, seqs, err)
	}
	if err := r.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Get(ctx, "a"); !errors.Is(err, core.ErrNotFound) || err.Error() != `environments: environment "a" not found` {
		t.Errorf("get after delete: %v", err)
	}
}
