package agent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/approvals"
	"github.com/airlock-dev/airlock/internal/redistest"
)

// TestPendingStores runs the agent's view of pending approvals on the
// memory and Redis approval stores (the stores' own contract is in
// internal/approvals).
func TestPendingStores(t *testing.T) {
	t.Run("memory", func(t *testing.T) { pendingContract(t, pendingStore{approvals.NewMemory(nil)}) })
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t, false)
		pendingContract(t, pendingStore{approvals.NewRedis(srv.Client(t), "airlock:{test:agent}", time.Hour)})
	})
}

func pendingContract(t *testing.T, s pendingStore) {
	ctx := context.Background()
	t0 := time.Unix(1_700_000_000, 0).UTC()
	for i, tok := range []string{"b", "a", "c"} {
		if err := s.Put(ctx, Pending{RunID: "r1", Owner: "o", Token: tok, CallID: "c-" + tok, Name: "run_python", Arguments: `{"code":"1"}`, Created: t0.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.Put(ctx, Pending{RunID: "r2", Token: "z", Created: t0})
	list, err := s.List(ctx, "r1")
	if err != nil || len(list) != 3 || list[0].Token != "b" || list[2].Token != "c" {
		t.Fatalf("list: %+v %v", list, err)
	}
	if p := list[0]; p.Name != "run_python" || p.Owner != "o" || p.CallID != "c-b" || p.Arguments != `{"code":"1"}` || !p.Created.Equal(t0) {
		t.Fatalf("fields lost: %+v", p)
	}
	// Exactly one of many concurrent takes wins.
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := s.Take(ctx, "r1", "a")
			switch {
			case err == nil && p.Token == "a" && p.Owner == "o":
				wins.Add(1)
			case errors.Is(err, ErrNotPending):
			default:
				t.Errorf("take: %+v %v", p, err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d takes of one token succeeded", wins.Load())
	}
	if _, err := s.Take(ctx, "r1", "nope"); !errors.Is(err, ErrNotPending) {
		t.Fatalf("unknown token: %v", err)
	}
	if err := s.DeleteRun(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.List(ctx, "r1"); len(list) != 0 {
		t.Fatalf("deleted run still lists %d", len(list))
	}
	if list, _ := s.List(ctx, "r2"); len(list) != 1 {
		t.Fatalf("other run lost its approval: %d", len(list))
	}
}
