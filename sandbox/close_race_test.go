package sandbox

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRemovalsDuringClose: containers removed while Close waits for the
// removals (a hibernating session ending as its worker shuts down) are
// still removed, and the wait is not raced (run under -race).
func TestRemovalsDuringClose(t *testing.T) {
	var removed atomic.Int32
	f := &fakeDocker{remove: func(string) error { removed.Add(1); return nil }}
	cfg := DefaultConfig()
	cfg.PoolSize = 0
	e := New(cfg, f, nil)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				e.destroy("c", nil, nil)
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	e.Settle()
	if n := removed.Load(); n != 200 {
		t.Fatalf("%d removals, want 200", n)
	}
}
