package state_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/state"
)

// TestBoltLazyPutNoCommit: a lazy Put answers without a commit (no fsync),
// is committed by the flusher within LazyFlush with no other write, and a
// lazy Put followed by Close survives a reopen.
func TestBoltLazyPutNoCommit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := state.OpenBoltWith(dir, state.BoltOptions{LazyFlush: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	k := state.Key{Kind: "session", Owner: "alice", ID: "s1"}
	before := state.BoltCommits(b)
	for i := 0; i < 20; i++ {
		if _, err := b.Put(bctx(t), k, []byte("touch"), state.PutOptions{Lazy: true, TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	if n := state.BoltCommits(b) - before; n > 1 { // the flusher may have run once meanwhile
		t.Fatalf("20 lazy puts made %d commits, want at most 1", n)
	}
	deadline := time.Now().Add(testscale.D(5 * time.Second))
	for state.BoltCommits(b) == before {
		if time.Now().After(deadline) {
			t.Fatal("the lazy write was not committed within its flush interval")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := b.Put(bctx(t), k, []byte("last"), state.PutOptions{Lazy: true}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openBolt(t, dir)
	defer b.Close()
	it, err := b.Get(bctx(t), k)
	if err != nil || string(it.Value) != "last" || it.Version != 21 {
		t.Fatalf("after reopen: %q v%d, %v; want \"last\" v21", it.Value, it.Version, err)
	}
}

// BenchmarkBoltLazyPut is a session touch's write: lazy, so no fsync.
func BenchmarkBoltLazyPut(b *testing.B) {
	s, err := state.OpenBolt(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	k := state.Key{Kind: "session", Owner: "alice", ID: "s1"}
	val := make([]byte, 300)
	for i := 0; i < b.N; i++ {
		if _, err := s.Put(context.Background(), k, val, state.PutOptions{Lazy: true, TTL: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBoltLazyDelete: a lazy Delete answers without a commit, hides the
// record at once from Get and List, keeps Delete's version condition, a
// later Put starts it over at version 1, and Close makes it durable; a
// copy of the file before any commit (what a crash leaves) still has it.
func TestBoltLazyDelete(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := state.OpenBoltWith(dir, state.BoltOptions{LazyFlush: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	k := state.Key{Kind: "snapchunk", Owner: "alice", ID: "c1"}
	k2 := state.Key{Kind: "snapchunk", Owner: "alice", ID: "c2"}
	for _, key := range []state.Key{k, k2} {
		if _, err := b.Put(bctx(t), key, []byte("x"), state.PutOptions{TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	before := state.BoltCommits(b)
	if err := state.DeleteWith(bctx(t), b, k, 7, true); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("lazy delete of the wrong version: %v, want ErrConflict", err)
	}
	if err := state.DeleteWith(bctx(t), b, k, 1, true); err != nil {
		t.Fatal(err)
	}
	if n := state.BoltCommits(b) - before; n != 0 {
		t.Fatalf("a lazy delete made %d commits, want none", n)
	}
	if _, err := b.Get(bctx(t), k); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("get after lazy delete: %v, want ErrNotFound", err)
	}
	items, err := b.List(bctx(t), "snapchunk", "alice", "", 0)
	if err != nil || len(items) != 1 || items[0].Key.ID != "c2" {
		t.Fatalf("list after lazy delete: %+v, %v; want c2 alone", items, err)
	}
	c := openCrashCopy(t, b)
	if _, err := c.Get(bctx(t), k); err != nil {
		t.Fatalf("a crash before the flush keeps the record (the stated bound): %v", err)
	}
	c.Close()
	if v, err := b.Put(bctx(t), k2, []byte("y"), state.PutOptions{Lazy: true}); err != nil || v != 2 {
		t.Fatalf("lazy put of c2: v%d, %v", v, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openBolt(t, dir)
	defer b.Close()
	if _, err := b.Get(bctx(t), k); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("after reopen: %v, want ErrNotFound", err)
	}
	if v, err := b.Put(bctx(t), k, []byte("z"), state.PutOptions{}); err != nil || v != 1 {
		t.Fatalf("put after the delete: v%d, %v; want v1", v, err)
	}
}
