package state_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/state"
)

// holdCommits makes b's committer stop in its next transaction until the
// returned release is called; entered is closed once it has stopped.
func holdCommits(t *testing.T, b *state.Bolt) (entered <-chan struct{}, release func()) {
	t.Helper()
	in, out := make(chan struct{}), make(chan struct{})
	var once sync.Once
	state.SetBoltCommitHook(b, func() {
		once.Do(func() {
			close(in)
			<-out
		})
	})
	var rel sync.Once
	release = func() { rel.Do(func() { close(out) }) }
	t.Cleanup(release)
	return in, release
}

// within fails the test unless fn returns within d (testscale'd).
func within(t *testing.T, d time.Duration, what string, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(testscale.D(d)):
		t.Fatalf("%s waited for the committer (held in a commit)", what)
	}
}

// TestBoltLazyWritesSkipCommitter (issue 33): while the committer is held
// in a commit (its disk syncs), lazy puts, deletes and appends answer at
// once, to records and logs in the file or new, and are read back; a lazy
// write of the very record the held commit writes queues behind it
// instead and builds on it (its IfVersion sees the held write's version,
// not the file's older one). After the commit, everything survives Close
// and a reopen.
func TestBoltLazyWritesSkipCommitter(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := state.OpenBoltWith(dir, state.BoltOptions{LazyFlush: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(id string) state.Key { return state.Key{Kind: "session", Owner: "alice", ID: id} }
	logk := func(id string) state.Key { return state.Key{Kind: "sessionlog", Owner: "alice", ID: id} }
	for _, id := range []string{"held", "old", "gone"} {
		if _, err := b.Put(bctx(t), rec(id), []byte(id+"1"), state.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Append(bctx(t), logk("old"), []byte("a"), 10, time.Hour); err != nil {
		t.Fatal(err)
	}
	entered, release := holdCommits(t, b)
	held := make(chan error, 1)
	go func() { // an ordinary write the committer holds open
		_, err := b.Put(bctx(t), rec("held"), []byte("held2"), state.PutOptions{IfVersion: 1})
		held <- err
	}()
	select {
	case <-entered:
	case <-time.After(testscale.D(10 * time.Second)):
		t.Fatal("the held commit did not start")
	}
	queued := b.QueuedWrites()

	within(t, 2*time.Second, "lazy put of a record in the file", func() error {
		v, err := b.Put(bctx(t), rec("old"), []byte("old2"), state.PutOptions{IfVersion: 1, Lazy: true})
		if err == nil && v != 2 {
			err = fmt.Errorf("version %d, want 2", v)
		}
		return err
	})
	within(t, 2*time.Second, "lazy put of a new record", func() error {
		_, err := b.Put(bctx(t), rec("new"), []byte("new1"), state.PutOptions{IfVersion: -1, Lazy: true})
		return err
	})
	within(t, 2*time.Second, "lazy put with a stale version", func() error {
		if _, err := b.Put(bctx(t), rec("old"), []byte("x"), state.PutOptions{IfVersion: 1, Lazy: true}); !errors.Is(err, state.ErrConflict) {
			return fmt.Errorf("got %v, want a conflict", err)
		}
		return nil
	})
	within(t, 2*time.Second, "lazy delete", func() error { return state.DeleteWith(bctx(t), b, rec("gone"), 1, true) })
	within(t, 2*time.Second, "lazy append to a log in the file", func() error {
		seq, err := state.AppendWith(bctx(t), b, logk("old"), []byte("b"), 10, time.Hour, true)
		if err == nil && seq != 2 {
			err = fmt.Errorf("seq %d, want 2", seq)
		}
		return err
	})
	within(t, 2*time.Second, "lazy append to a new log", func() error {
		_, err := state.AppendWith(bctx(t), b, logk("new"), []byte("x"), 10, time.Hour, true)
		return err
	})
	if n := b.QueuedWrites() - queued; n != 0 {
		t.Fatalf("%d lazy writes were handed to the committer, want none", n)
	}
	if it, err := b.Get(bctx(t), rec("old")); err != nil || string(it.Value) != "old2" || it.Version != 2 {
		t.Fatalf("old while held: %q v%d %v", it.Value, it.Version, err)
	}
	if _, err := b.Get(bctx(t), rec("gone")); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("gone while held: %v, want not found", err)
	}
	if got := rangeAll(t, b, logk("old")); got != "1:a 2:b " {
		t.Fatalf("old log while held: %q", got)
	}

	// A lazy write of the held record queues behind the held write.
	behind := make(chan error, 1)
	go func() {
		_, err := b.Put(bctx(t), rec("held"), []byte("held3"), state.PutOptions{IfVersion: 2, Lazy: true})
		behind <- err
	}()
	for b.QueuedWrites() == queued { // it reached the committer's queue
		select {
		case err := <-behind:
			t.Fatalf("the lazy write of the held record answered during the held commit: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	release()
	for _, c := range []chan error{held, behind} {
		select {
		case err := <-c:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(testscale.D(10 * time.Second)):
			t.Fatal("a write did not finish after the commit was released")
		}
	}
	if n := b.LazyQueued(); n != 1 {
		t.Fatalf("%d lazy writes queued, want 1 (the held record's)", n)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openBolt(t, dir)
	defer b.Close()
	for id, want := range map[string]string{"held": "held3", "old": "old2", "new": "new1"} {
		if it, err := b.Get(bctx(t), rec(id)); err != nil || string(it.Value) != want {
			t.Fatalf("%s after reopen: %q, %v; want %q", id, it.Value, err, want)
		}
	}
	if it, _ := b.Get(bctx(t), rec("held")); it.Version != 3 {
		t.Fatalf("held after reopen: v%d, want 3", it.Version)
	}
	if _, err := b.Get(bctx(t), rec("gone")); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("gone after reopen: %v, want not found", err)
	}
	if got := rangeAll(t, b, logk("old")); got != "1:a 2:b " {
		t.Fatalf("old log after reopen: %q", got)
	}
	if got := rangeAll(t, b, logk("new")); got != "1:x " {
		t.Fatalf("new log after reopen: %q", got)
	}
}

// TestBoltLazyWritesDuringFlush: lazy writes made while the flusher's
// commit of the overlay is held open are not lost when that commit drops
// what it wrote from the overlay: a record written again keeps its new
// value, a log keeps its later entries (read at once, and after a reopen).
// A copy of the file taken once the flush committed (what a crash leaves)
// holds what the flush carried, and lacks only what came after it.
func TestBoltLazyWritesDuringFlush(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := state.OpenBoltWith(dir, state.BoltOptions{LazyFlush: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rk := state.Key{Kind: "session", Owner: "alice", ID: "s1"}
	lk := state.Key{Kind: "sessionlog", Owner: "alice", ID: "s1"}
	entered, release := holdCommits(t, b)
	if _, err := b.Put(bctx(t), rk, []byte("one"), state.PutOptions{Lazy: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := state.AppendWith(bctx(t), b, lk, []byte("a"), 10, time.Hour, true); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered: // the flusher's commit of "one" and "a"
	case <-time.After(testscale.D(10 * time.Second)):
		t.Fatal("the flusher did not commit the overlay")
	}
	commits := state.BoltCommits(b)
	within(t, 2*time.Second, "lazy put during the flush", func() error {
		_, err := b.Put(bctx(t), rk, []byte("two"), state.PutOptions{IfVersion: 1, Lazy: true})
		return err
	})
	within(t, 2*time.Second, "lazy append during the flush", func() error {
		seq, err := state.AppendWith(bctx(t), b, lk, []byte("b"), 10, time.Hour, true)
		if err == nil && seq != 2 {
			err = fmt.Errorf("seq %d, want 2", seq)
		}
		return err
	})
	state.SetBoltCommitHook(b, nil) // later flushes run freely
	release()
	deadline := time.Now().Add(testscale.D(10 * time.Second))
	for state.BoltCommits(b) == commits {
		if time.Now().After(deadline) {
			t.Fatal("the held flush did not commit")
		}
		time.Sleep(time.Millisecond)
	}
	// At once after the held flush: the overlay still answers for what
	// came during it.
	if it, err := b.Get(bctx(t), rk); err != nil || string(it.Value) != "two" || it.Version != 2 {
		t.Fatalf("after the flush: %q v%d %v; want \"two\" v2", it.Value, it.Version, err)
	}
	if got := rangeAll(t, b, lk); got != "1:a 2:b " {
		t.Fatalf("log after the flush: %q", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openBolt(t, dir)
	defer b.Close()
	if it, err := b.Get(bctx(t), rk); err != nil || string(it.Value) != "two" || it.Version != 2 {
		t.Fatalf("after reopen: %q v%d %v; want \"two\" v2", it.Value, it.Version, err)
	}
	if got := rangeAll(t, b, lk); got != "1:a 2:b " {
		t.Fatalf("log after reopen: %q", got)
	}
}

// TestBoltLazyMixedVersions: many writers, lazy and synced, each reading a
// record and writing it conditioned on the version read, while the
// flusher commits every millisecond: every successful write took exactly
// one version (the final version is the number of successes: no two
// writes succeeded on the same version), and the log's appends, lazy and
// synced, got dense distinct seqs. Run with -race.
func TestBoltLazyMixedVersions(t *testing.T) {
	t.Parallel()
	b, err := state.OpenBoltWith(t.TempDir(), state.BoltOptions{LazyFlush: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	k := state.Key{Kind: "session", Owner: "alice", ID: "s1"}
	lk := state.Key{Kind: "sessionlog", Owner: "alice", ID: "s1"}
	if _, err := b.Put(bctx(t), k, []byte("0"), state.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var ok atomic.Int64
	var wg sync.WaitGroup
	seqs := make(chan int64, 1000)
	for w := range 6 {
		wg.Go(func() {
			for i := range 40 {
				lazy := (w+i)%3 != 0
				it, err := b.Get(bctx(t), k)
				if err != nil {
					t.Error(err)
					return
				}
				_, err = b.Put(bctx(t), k, []byte(fmt.Sprint(w, i)), state.PutOptions{IfVersion: it.Version, Lazy: lazy})
				switch {
				case err == nil:
					ok.Add(1)
				case !errors.Is(err, state.ErrConflict):
					t.Error(err)
					return
				}
				seq, err := state.AppendWith(bctx(t), b, lk, []byte("x"), 1000, time.Hour, lazy)
				if err != nil {
					t.Error(err)
					return
				}
				seqs <- seq
			}
		})
	}
	wg.Wait()
	close(seqs)
	it, err := b.Get(bctx(t), k)
	if err != nil {
		t.Fatal(err)
	}
	if it.Version != ok.Load()+1 {
		t.Fatalf("final version %d after %d successful conditional writes: want %d", it.Version, ok.Load(), ok.Load()+1)
	}
	seen := map[int64]bool{}
	for s := range seqs {
		if seen[s] || s < 1 || s > 240 {
			t.Fatalf("append seq %d repeated or out of 1..240", s)
		}
		seen[s] = true
	}
	es, err := b.Range(bctx(t), lk, 0, 0, 0)
	if err != nil || len(es) != 240 {
		t.Fatalf("log holds %d entries, %v; want 240", len(es), err)
	}
}
