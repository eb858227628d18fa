package snapshots

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/state"
)

// gateEngine is a session engine whose calls answer at once and whose
// snapshots are a few bytes per part.
type gateEngine struct {
	mu    sync.Mutex
	snaps int
}

func (e *gateEngine) Handle(_ context.Context, req core.Request) (core.Result, error) {
	if req.Op == core.OpSessionInfo {
		return core.Result{Status: core.StatusOK}, nil
	}
	return core.Result{Status: core.StatusOK, SessionID: req.SessionID, Stdout: "1\n"}, nil
}

func (e *gateEngine) SnapshotSession(_ context.Context, _, _ string, _ int64, sink core.SnapshotSink) (core.SnapshotReport, error) {
	e.mu.Lock()
	e.snaps++
	e.mu.Unlock()
	for _, p := range core.SnapshotParts {
		if err := sink(p, 3, []byte(p[:1]+"..")); err != nil {
			return core.SnapshotReport{}, err
		}
	}
	return core.SnapshotReport{}, nil
}

func (e *gateEngine) RestoreSession(context.Context, string, string, string, int64, core.SnapshotSource) (core.SnapshotReport, error) {
	return core.SnapshotReport{}, nil
}

// stuckResumes is a store whose resume record writes wait for release
// (a disk sync that takes its time).
type stuckResumes struct {
	state.Store
	entered chan struct{}
	release chan struct{}
}

func (s *stuckResumes) Put(ctx context.Context, k state.Key, v []byte, opt state.PutOptions) (int64, error) {
	if k.Kind == kindResume {
		s.entered <- struct{}{}
		<-s.release
	}
	return s.Store.Put(ctx, k, v, opt)
}

// TestAutosnapshotDoesNotHoldTheNextCall: once a session's automatic
// snapshot has left the sandbox, the session's next call runs while the
// snapshot is still being stored (its resume record's write is stuck);
// the record is written afterwards, naming the later snapshot last; and a
// close arriving while one is stored waits for it, so no resume record
// outlives the closed session.
func TestAutosnapshotDoesNotHoldTheNextCall(t *testing.T) {
	ctx := context.Background()
	st := &stuckResumes{Store: state.NewMemory(nil), entered: make(chan struct{}, 4), release: make(chan struct{})}
	snaps := New(st, Config{MaxBytes: 1 << 20}, nil)
	res := NewResumes(st, snaps)
	eng := &gateEngine{}
	k := NewKeeper(eng, snaps, NewCallLog(st), nil)
	k.EnableResume(ResumeConfig{Resumes: res, AutoMaxBytes: 1 << 20})
	k.remember(ctx, "s1", core.Request{Op: core.OpSessionOpen, Owner: "alice"}) // as a session's open does
	call := func() {
		t.Helper()
		done := make(chan error, 1)
		go func() {
			_, err := k.Handle(ctx, core.Request{Op: core.OpExec, Owner: "alice", SessionID: "s1", Code: "print(1)"})
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(testscale.D(10 * time.Second)):
			t.Fatal("the call waited for the automatic snapshot's store write")
		}
	}
	call()
	<-st.entered // the first snapshot is being stored: its resume write is stuck
	call()       // runs all the same
	st.release <- struct{}{}
	<-st.entered // the second call's snapshot
	closed := make(chan error, 1)
	go func() {
		_, err := k.Handle(ctx, core.Request{Op: core.OpSessionClose, Owner: "alice", SessionID: "s1"})
		closed <- err
	}()
	select {
	case err := <-closed:
		t.Fatalf("the close did not wait for the snapshot being stored: %v", err)
	case <-time.After(testscale.D(200 * time.Millisecond)):
	}
	st.release <- struct{}{}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	k.WaitAutosnapshots()
	if _, err := res.Get(ctx, "alice", "s1"); core.CodeOf(err) != core.ErrNotFound {
		t.Fatalf("a resume record outlived the closed session: %v", err)
	}
	if eng.snaps != 2 {
		t.Fatalf("%d snapshots taken, want 2", eng.snaps)
	}
}
