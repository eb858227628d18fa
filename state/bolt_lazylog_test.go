package state_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/state"
)

// seqs renders a log's entries as "seq:data" pairs.
func seqs(es []state.Entry) string {
	s := ""
	for _, e := range es {
		s += fmt.Sprintf("%d:%s ", e.Seq, e.Data)
	}
	return s
}

// rangeAll reads log k from after 0.
func rangeAll(t *testing.T, b state.Store, k state.Key) string {
	t.Helper()
	es, err := b.Range(bctx(t), k, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return seqs(es)
}

// TestBoltLazyAppend: lazy appends answer without a commit, are visible
// to Range at once (mixed with ordinary appends, dense seqs, the length
// bound applied across file and overlay, Range's after and limit), are
// committed by the flusher within LazyFlush, and a lazy append followed
// by Close survives a reopen. A copy of the file taken before the flush
// (what a crash leaves) lacks only the lazy appends: the stated bound.
func TestBoltLazyAppend(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := state.OpenBoltWith(dir, state.BoltOptions{LazyFlush: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	k := state.Key{Kind: "sessionlog", Owner: "alice", ID: "s1"}
	if _, err := b.Append(bctx(t), k, []byte("a"), 4, time.Hour); err != nil {
		t.Fatal(err)
	}
	before := state.BoltCommits(b)
	for i, d := range []string{"b", "c"} {
		seq, err := state.AppendWith(bctx(t), b, k, []byte(d), 4, time.Hour, true)
		if err != nil || seq != int64(i+2) {
			t.Fatalf("lazy append %s: seq %d, %v; want %d", d, seq, err, i+2)
		}
	}
	if n := state.BoltCommits(b) - before; n != 0 {
		t.Fatalf("2 lazy appends made %d commits, want none", n)
	}
	if got, want := rangeAll(t, b, k), "1:a 2:b 3:c "; got != want {
		t.Fatalf("range before any commit: %q, want %q", got, want)
	}
	// A crash now: the file holds only the synced append.
	c := openCrashCopy(t, b)
	if got, want := rangeAll(t, c, k), "1:a "; got != want {
		t.Fatalf("after a crash before the flush: %q, want %q", got, want)
	}
	c.Close()
	// An ordinary append commits the overlay with it, in order.
	if seq, err := b.Append(bctx(t), k, []byte("d"), 4, time.Hour); err != nil || seq != 4 {
		t.Fatalf("append d: seq %d, %v; want 4", seq, err)
	}
	for _, d := range []string{"e", "f"} {
		if _, err := state.AppendWith(bctx(t), b, k, []byte(d), 4, time.Hour, true); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := rangeAll(t, b, k), "3:c 4:d 5:e 6:f "; got != want {
		t.Fatalf("range with the bound of 4 across file and overlay: %q, want %q", got, want)
	}
	es, err := b.Range(bctx(t), k, 3, 2, 0)
	if err != nil || seqs(es) != "4:d 5:e " {
		t.Fatalf("range after 3, limit 2: %q, %v", seqs(es), err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openBolt(t, dir)
	defer b.Close()
	if got, want := rangeAll(t, b, k), "3:c 4:d 5:e 6:f "; got != want {
		t.Fatalf("after reopen: %q, want %q", got, want)
	}
}

// TestBoltLazyAppendFlush: with no other write, the flusher commits lazy
// appends within LazyFlush; a Range waiting for the log is woken by a lazy
// append; a log deleted after lazy appends stays deleted.
func TestBoltLazyAppendFlush(t *testing.T) {
	t.Parallel()
	b, err := state.OpenBoltWith(t.TempDir(), state.BoltOptions{LazyFlush: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	k := state.Key{Kind: "sessionlog", Owner: "bob", ID: "s2"}
	got := make(chan string, 1)
	go func() {
		es, err := b.Range(context.Background(), k, 0, 0, testscale.D(10*time.Second))
		got <- fmt.Sprint(seqs(es), err)
	}()
	time.Sleep(20 * time.Millisecond)
	before := state.BoltCommits(b)
	if _, err := state.AppendWith(bctx(t), b, k, []byte("x"), 0, time.Hour, true); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "1:x <nil>" {
			t.Fatalf("waiting range: %q", s)
		}
	case <-time.After(testscale.D(5 * time.Second)):
		t.Fatal("a waiting Range was not woken by a lazy append")
	}
	deadline := time.Now().Add(testscale.D(5 * time.Second))
	for state.BoltCommits(b) == before {
		if time.Now().After(deadline) {
			t.Fatal("the lazy append was not committed within its flush interval")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := state.AppendWith(bctx(t), b, k, []byte("y"), 0, time.Hour, true); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteLog(bctx(t), k); err != nil {
		t.Fatal(err)
	}
	if s := rangeAll(t, b, k); s != "" {
		t.Fatalf("range after DeleteLog: %q, want nothing", s)
	}
	if seq, err := state.AppendWith(bctx(t), b, k, []byte("z"), 0, time.Hour, true); err != nil || seq != 1 {
		t.Fatalf("lazy append after DeleteLog: seq %d, %v; want 1 (a new log)", seq, err)
	}
	if s := rangeAll(t, b, k); s != "1:z " {
		t.Fatalf("range of the new log: %q", s)
	}
}
