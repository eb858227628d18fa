package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/airlock-dev/airlock/internal/redistest"
)

// TestPendingStores runs one contract on the memory and Redis stores.
func TestPendingStores(t *testing.T) {
	t.Run("memory", func(t *testing.T) { pendingContract(t, NewMemoryPending()) })
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t, false)
		rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", srv.Port())})
		t.Cleanup(func() { _ = rdb.Close() })
		pendingContract(t, NewRedisPending(rdb, "", time.Hour))
	})
}

func pendingContract(t *testing.T, s PendingStore) {
	ctx := context.Background()
	t0 := time.Unix(1_700_000_000, 0).UTC()
	for i, tok := range []string{"b", "a", "c"} {
		if err := s.Put(ctx, Pending{RunID: "r1", Owner: "o", Token: tok, Name: "run_python", Created: t0.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.Put(ctx, Pending{RunID: "r2", Token: "z", Created: t0})
	list, err := s.List(ctx, "r1")
	if err != nil || len(list) != 3 || list[0].Token != "b" || list[2].Token != "c" || list[0].Name != "run_python" {
		t.Fatalf("list: %+v %v", list, err)
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
