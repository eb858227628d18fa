package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// TestSnapshotLeavesTheSessionIdle: a snapshot is the service's own work
// (the automatic one after each call, a hibernation), not a call: while it
// runs the session shows idle, not busy (GET /v1/sessions/{id} right after
// a call answered said busy), and an interrupt finds no call to stop.
func TestSnapshotLeavesTheSessionIdle(t *testing.T) {
	t.Parallel() // functional: containers of its own engine only
	e := newTestEngine(t, nil)
	s := openSession(t, e, "o")
	// Saving slow takes a second and a half inside dill.
	sexec(t, e, s.ID, "o", core.Python, "import time\nclass Slow:\n    def __getstate__(self):\n        time.sleep(1.5)\n        return {}\nslow = Slow()", core.Limits{})
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
		defer cancel()
		_, err := e.SnapshotSession(ctx, "o", s.ID, 64<<20, func(string, int64, []byte) error { return nil })
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		info, err := e.Session("o", s.ID)
		if err != nil {
			t.Fatalf("session during the snapshot: %v", err)
		}
		if info.State != "idle" {
			t.Fatalf("state %q during a snapshot, want idle", info.State)
		}
	}
	if hit, err := e.InterruptSession(context.Background(), "o", s.ID); err != nil || hit {
		t.Errorf("interrupt during a snapshot: %v %v, want no call stopped", hit, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("snapshot: %v", err)
	}
}
