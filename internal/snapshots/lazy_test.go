package snapshots

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// TestInternalSnapshotOneSync: on the embedded store, an internal
// snapshot (a session's automatic one) and its resume record cost one
// commit, not one per chunk, record and delete; replacing it deletes the
// old one; the call log's appends cost none. A copy of the file taken
// then (what a crash leaves) holds the whole snapshot, readable.
func TestInternalSnapshotOneSync(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := state.OpenBoltWith(dir, state.BoltOptions{LazyFlush: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := New(b, Config{MaxBytes: 64 << 20}, nil)
	res := NewResumes(b, s)
	logs := NewCallLog(b)
	save := func(id string) {
		t.Helper()
		w, err := s.CreateInternal(ctx, "alice", id, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range []string{"ns", "work"} {
			if err := w.Write(ctx, part, bytes.Repeat([]byte(part), 1000)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Commit(ctx, Meta{Session: "s1"}); err != nil {
			t.Fatal(err)
		}
		if err := res.Put(ctx, Resume{Owner: "alice", Session: "s1", Snapshot: id, At: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	save("hib-1")
	before := b.Commits()
	if err := logs.Append(ctx, "alice", "s1", Call{Code: "print(1)", Status: core.StatusOK}); err != nil {
		t.Fatal(err)
	}
	if n := b.Commits() - before; n != 0 {
		t.Fatalf("a call log append made %d commits, want none", n)
	}
	save("hib-2")
	if n := b.Commits() - before; n != 1 {
		t.Fatalf("an automatic snapshot made %d commits, want 1", n)
	}
	if _, err := s.Get(ctx, "alice", "hib-1"); core.CodeOf(err) != core.ErrNotFound {
		t.Fatalf("the replaced snapshot: %v, want not found", err)
	}
	calls, err := logs.Calls(ctx, "alice", "s1")
	if err != nil || len(calls) != 1 {
		t.Fatalf("call log: %d calls, %v", len(calls), err)
	}
	crash, err := state.OpenBolt(t.TempDir() + "/copy.db")
	if err != nil {
		t.Fatal(err)
	}
	crash.Close()
	copyFile(t, b.Path(), crash.Path())
	c, err := state.OpenBolt(crash.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cs := New(c, Config{MaxBytes: 64 << 20}, nil)
	r, err := NewResumes(c, cs).Get(ctx, "alice", "s1")
	if err != nil || r.Snapshot != "hib-2" {
		t.Fatalf("after a crash: resume %+v, %v; want hib-2", r, err)
	}
	m, err := cs.Get(ctx, "alice", "hib-2")
	if err != nil {
		t.Fatalf("after a crash the resume record's snapshot is missing: %v", err)
	}
	var got bytes.Buffer
	if err := cs.Read(ctx, m, "ns", func(c []byte) error { got.Write(c); return nil }); err != nil || got.Len() != 2000 {
		t.Fatalf("after a crash: ns part %d bytes, %v", got.Len(), err)
	}
	if calls, _ := NewCallLog(c).Calls(ctx, "alice", "s1"); len(calls) != 1 {
		t.Fatalf("after a crash, the call log committed with the snapshot has %d calls, want 1", len(calls))
	}
}

// copyFile copies src to dst (a crash's view of an open store file).
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}
