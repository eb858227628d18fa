package snapshots

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// TestResumeRecords: internal snapshots are hidden and outside the
// owner's quota; a resume record that names a newer snapshot deletes the
// older one; a record past its session's maximum life is not found (and
// its snapshot goes); Drop removes both; the wake lock is held by one
// caller at a time.
func TestResumeRecords(t *testing.T) {
	ctx := context.Background()
	st := state.NewMemory(nil)
	snaps := New(st, Config{MaxBytes: 1 << 20, Quota: 10}, nil) // a 10-byte quota
	res := NewResumes(st, snaps)
	save := func(id string) {
		t.Helper()
		w, err := snaps.CreateInternal(ctx, "alice", id, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range core.SnapshotParts {
			if err := w.Write(ctx, p, make([]byte, 100)); err != nil { // over the quota: not counted
				t.Fatal(err)
			}
		}
		if _, err := w.Commit(ctx, Meta{Session: "s1"}); err != nil {
			t.Fatal(err)
		}
	}
	save("hib-1")
	if u, _ := snaps.Usage(ctx, "alice"); u != 0 {
		t.Fatalf("internal snapshots count %d bytes in the quota", u)
	}
	if l, _ := snaps.List(ctx, "alice"); len(l) != 0 {
		t.Fatalf("internal snapshots are listed: %+v", l)
	}
	exp := time.Now().Add(time.Hour)
	if err := res.Put(ctx, Resume{Owner: "alice", Session: "s1", Snapshot: "hib-1", ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	save("hib-2")
	if err := res.Put(ctx, Resume{Owner: "alice", Session: "s1", Snapshot: "hib-2", ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	if _, err := snaps.Get(ctx, "alice", "hib-1"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("the replaced snapshot is kept: %v", err)
	}
	if r, err := res.Get(ctx, "alice", "s1"); err != nil || r.Snapshot != "hib-2" {
		t.Fatalf("get = %+v, %v", r, err)
	}
	if _, err := res.Get(ctx, "bob", "s1"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("another owner reads the record: %v", err)
	}
	ok, err := res.Lock(ctx, "alice", "s1", time.Minute)
	if err != nil || !ok {
		t.Fatalf("lock: %v %v", ok, err)
	}
	if again, _ := res.Lock(ctx, "alice", "s1", time.Minute); again || !res.Locked(ctx, "alice", "s1") {
		t.Fatal("the wake lock was taken twice")
	}
	res.Unlock(ctx, "alice", "s1")
	if res.Locked(ctx, "alice", "s1") {
		t.Fatal("the wake lock outlived its unlock")
	}
	// Past the session's maximum life: no wake, and its snapshot goes.
	if err := res.Put(ctx, Resume{Owner: "alice", Session: "s1", Snapshot: "hib-2", ExpiresAt: time.Now().Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, err := res.Get(ctx, "alice", "s1"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("a session past its maximum life resumes: %v", err)
	}
	if _, err := snaps.Get(ctx, "alice", "hib-2"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("the expired session's snapshot is kept: %v", err)
	}
	save("hib-3")
	_ = res.Put(ctx, Resume{Owner: "alice", Session: "s2", Snapshot: "hib-3", ExpiresAt: exp})
	res.Drop(ctx, "alice", "s2")
	if _, err := snaps.Get(ctx, "alice", "hib-3"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("a dropped session's snapshot is kept: %v", err)
	}
}
