package state_test

import (
	"context"
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
