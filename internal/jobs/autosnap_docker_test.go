package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/jobs"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/queue"
)

// TestAutosnapshotBringsASessionBack: with automatic snapshots a burst of
// calls is saved as of its last call; when the session's container is
// lost behind the Keeper's back (as with a worker's crash), the next call
// comes back with the last call's state and says resumed. A session over
// the bound is not saved after its calls and stays lost.
func TestAutosnapshotBringsASessionBack(t *testing.T) {
	st := boltStore(t)
	q, err := queue.NewMemory(queue.Config{}, queue.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	k, eng, _ := resumeWorker(t, q, st, "auto", snapshots.ResumeConfig{AutoMaxBytes: 256 << 10})
	c := jobs.NewClient(q, jobs.ClientConfig{})
	res := snapshots.NewResumes(st, snapshots.New(st, snapshots.DefaultConfig(), nil))
	c.SetResumes(res)
	ctx := context.Background()
	small, err := c.OpenSession(ctx, "alice", core.Limits{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	big, err := c.OpenSession(ctx, "alice", core.Limits{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c, "alice", small, "n = 0")
	for range 5 {
		run(t, c, "alice", small, "n += 1")
	}
	run(t, c, "alice", big, "blob = bytes(1 << 20)")
	k.WaitAutosnapshots()
	if _, err := res.Get(ctx, "alice", big); err == nil {
		t.Fatal("a session over the automatic snapshot bound was saved")
	}
	// The containers go away behind the Keeper's back.
	for _, id := range []string{small, big} {
		if err := eng.CloseSession("alice", id); err != nil {
			t.Fatal(err)
		}
	}
	out := run(t, c, "alice", small, "print(n)")
	if strings.TrimSpace(out.Stdout) != "5" || !out.Resumed {
		t.Fatalf("after the loss: %q resumed %v, want 5 resumed", out.Stdout, out.Resumed)
	}
	if out.ExecutionCount != 7 { // six calls saved: the woken session numbers on
		t.Fatalf("after the wake: execution_count %d, want 7", out.ExecutionCount)
	}
	if _, err := c.Exec(ctx, core.Request{Owner: "alice", SessionID: big, Code: "print(len(blob))", Limits: core.Limits{Timeout: time.Minute}}); err == nil {
		t.Fatal("a session with no snapshot came back")
	}
}

// TestAutosnapshotWaitsForAQuietSession: with AutoQuiet a burst of calls
// back to back is not saved while it runs (no snapshot holds up its next
// call); once the session is quiet, one snapshot holds the burst's last
// state.
func TestAutosnapshotWaitsForAQuietSession(t *testing.T) {
	st := boltStore(t)
	q, err := queue.NewMemory(queue.Config{}, queue.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	// Not scaled: the quiet time must stay under the 5 s most a session
	// waits; a burst slower than it (a loaded machine) skips that check.
	quiet := 2 * time.Second
	k, _, _ := resumeWorker(t, q, st, "quiet", snapshots.ResumeConfig{AutoMaxBytes: 256 << 10, AutoQuiet: quiet})
	c := jobs.NewClient(q, jobs.ClientConfig{})
	res := snapshots.NewResumes(st, snapshots.New(st, snapshots.DefaultConfig(), nil))
	ctx := context.Background()
	sid, err := c.OpenSession(ctx, "alice", core.Limits{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	run(t, c, "alice", sid, "n = 0")
	for range 4 {
		run(t, c, "alice", sid, "n += 1")
	}
	_, err = res.Get(ctx, "alice", sid)
	if burst := time.Since(start); burst < quiet && err == nil {
		t.Fatalf("the session was saved during a %s burst, within the %s quiet time", burst, quiet)
	}
	k.WaitAutosnapshots()
	if _, err := res.Get(ctx, "alice", sid); err != nil {
		t.Fatalf("no snapshot once the session was quiet: %v", err)
	}
	if waited := time.Since(start); waited < quiet {
		t.Errorf("saved %s after the burst began, before the %s quiet time", waited, quiet)
	}
}
