package sessions

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// TestHibernatedSessionsAreListed: a session whose container is gone but
// which has a resume record is listed and viewed as hibernated, not
// dropped; closing it drops its record and its resume record; one with
// no resume record is gone as before. A record marked hibernated outlives
// its idle time, up to its maximum life.
func TestHibernatedSessionsAreListed(t *testing.T) {
	st := state.NewMemory(nil)
	now := time.Now()
	clock := func() time.Time { return now }
	be := &fakeBackend{open: map[string]bool{}}
	recs := sessionrecords.New(st, time.Minute, time.Hour, clock)
	svc := New(be, recs, clock, nil)
	res := snapshots.NewResumes(st, snapshots.New(st, snapshots.DefaultConfig(), nil))
	svc.SetResumes(res)
	ctx := context.Background()
	a, err := svc.Open(ctx, "alice", core.Limits{}, false, keys.Budget{}, core.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := svc.Open(ctx, "alice", core.Limits{}, false, keys.Budget{}, core.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	be.mu.Lock()
	delete(be.open, a.ID) // both containers gone; only a has a snapshot
	delete(be.open, b.ID)
	be.mu.Unlock()
	if err := res.Put(ctx, snapshots.Resume{Owner: "alice", Session: a.ID, Snapshot: "hib-x", ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	list := svc.List(ctx, "alice")
	if len(list) != 1 || list[0].ID != a.ID || list[0].State != wire.SessionHibernated {
		t.Fatalf("list = %+v, want %s hibernated alone", list, a.ID)
	}
	recs.SetHibernated(ctx, "alice", a.ID, true)
	if err := res.SetHibernated(ctx, "alice", a.ID, true); err != nil {
		t.Fatal(err)
	}
	now = now.Add(10 * time.Minute) // past the idle TTL, within the maximum life
	rec, ok := recs.Get(ctx, "alice", a.ID, false)
	if !ok || !rec.Hibernated {
		t.Fatalf("a hibernated record expired idle: %+v %v", rec, ok)
	}
	v, err := svc.View(ctx, rec)
	if err != nil || v.State != wire.SessionHibernated {
		t.Fatalf("view = %+v, %v", v, err)
	}
	now = now.Add(time.Hour) // past the maximum life: gone
	if _, ok := recs.Get(ctx, "alice", a.ID, false); ok {
		t.Fatal("a hibernated session outlived its maximum life")
	}
}
