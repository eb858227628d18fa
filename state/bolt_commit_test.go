package state

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
)

func openGroupBolt(t *testing.T, dir string) *Bolt {
	t.Helper()
	b, err := OpenBoltWith(dir, BoltOptions{SweepEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// holdCommitter queues a write whose fn blocks the committer (inside its
// transaction) until the returned release is called; when holdCommitter
// returns, the committer is in that fn and the queue is empty, so what is
// queued next goes in one group after release.
func holdCommitter(t *testing.T, b *Bolt) (release func()) {
	t.Helper()
	in, out := make(chan struct{}), make(chan struct{})
	var once sync.Once
	go func() {
		_ = b.update("hold", 0, func(*bolt.Tx) error {
			once.Do(func() { close(in) })
			<-out
			return nil
		})
	}()
	<-in
	var rel sync.Once
	return func() { rel.Do(func() { close(out) }) }
}

// waitQueued waits until n writes are queued for the committer.
func waitQueued(t *testing.T, b *Bolt, n int) {
	t.Helper()
	deadline := time.Now().Add(testscale.D(10 * time.Second))
	for {
		b.mu.Lock()
		got := len(b.queue)
		b.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued; want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBoltGroupCommitConcurrentWriters has 8 goroutines each write 40 times
// a shared record, a shared log and a record of its own: every write is
// there, the shared record's versions and the log's sequence numbers are
// exactly 1..320 with each writer seeing its own increase, and the writes
// took well under one commit each (at most one per two writes; with one
// transaction per write it would be 960).
func TestBoltGroupCommitConcurrentWriters(t *testing.T) {
	t.Parallel()
	const writers, rounds = 8, 40
	b := openGroupBolt(t, t.TempDir())
	defer b.Close()
	ctx := context.Background()
	shared, log := Key{Kind: "rec", Owner: "o", ID: "shared"}, Key{Kind: "log", Owner: "o", ID: "l"}
	before := b.commits.Load()
	versions := make([][]int64, writers)
	seqs := make([][]int64, writers)
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				v, err := b.Put(ctx, shared, []byte(fmt.Sprintf("%d-%d", w, i)), PutOptions{})
				if err != nil {
					errs <- err
					return
				}
				versions[w] = append(versions[w], v)
				s, err := b.Append(ctx, log, []byte(fmt.Sprintf("%d-%d", w, i)), 0, 0)
				if err != nil {
					errs <- err
					return
				}
				seqs[w] = append(seqs[w], s)
				own := Key{Kind: "rec", Owner: "o", ID: strconv.Itoa(w) + "-" + strconv.Itoa(i)}
				if v, err := b.Put(ctx, own, []byte("x"), PutOptions{IfVersion: -1}); err != nil || v != 1 {
					errs <- fmt.Errorf("create %v = %d, %v", own, v, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	commits := b.commits.Load() - before

	const total = writers * rounds
	dense := func(what string, per [][]int64) {
		var all []int64
		for w, vs := range per {
			for i := 1; i < len(vs); i++ {
				if vs[i] <= vs[i-1] {
					t.Fatalf("writer %d saw %s %d after %d", w, what, vs[i], vs[i-1])
				}
			}
			all = append(all, vs...)
		}
		sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
		if len(all) != total {
			t.Fatalf("%d %ss; want %d", len(all), what, total)
		}
		for i, v := range all {
			if v != int64(i+1) {
				t.Fatalf("%ss are not 1..%d: position %d holds %d", what, total, i, v)
			}
		}
	}
	dense("version", versions)
	dense("seq", seqs)
	if it, err := b.Get(ctx, shared); err != nil || it.Version != total {
		t.Fatalf("shared record = %+v, %v; want version %d", it, err, total)
	}
	es, err := b.Range(ctx, log, 0, 0, 0)
	if err != nil || len(es) != total || es[0].Seq != 1 || es[total-1].Seq != total {
		t.Fatalf("log: %d entries, %v; want seqs 1..%d", len(es), err, total)
	}
	items, err := b.List(ctx, "rec", "o", "", 0)
	if err != nil || len(items) != total+1 {
		t.Fatalf("list: %d records, %v; want %d", len(items), err, total+1)
	}
	writes := int64(3 * total)
	t.Logf("%d writes in %d commits (%.1f writes per commit)", writes, commits, float64(writes)/float64(commits))
	if commits > writes/2 {
		t.Fatalf("%d writes took %d commits; want at most %d (group commit)", writes, commits, writes/2)
	}
}

// TestBoltGroupCommitFailureIsolated queues one group of six writes behind
// a held committer: a create, a second create of the same record (a
// conflict only because of the first, in the same group), a write that
// half-writes then fails, a panicking write, an append and a counter
// increase. The failing three get their own errors and leave nothing
// behind; the other three commit together in one transaction with the
// results of a single run (version 1, seq 1, counter 1) although they ran
// again after the rollback; the committer survives the panic.
func TestBoltGroupCommitFailureIsolated(t *testing.T) {
	t.Parallel()
	b := openGroupBolt(t, t.TempDir())
	defer b.Close()
	ctx := context.Background()
	k, lk, ck := Key{Kind: "rec", Owner: "o", ID: "k"}, Key{Kind: "log", Owner: "o", ID: "l"}, Key{Kind: "ctr", Owner: "o", ID: "c"}
	junk := encKey(Key{Kind: "rec", Owner: "o", ID: "junk"})

	release := holdCommitter(t, b)
	defer release()
	before := b.commits.Load()
	type result struct {
		n   int64
		err error
	}
	results := make([]chan result, 6)
	ops := []func() (int64, error){
		func() (int64, error) { return b.Put(ctx, k, []byte("first"), PutOptions{IfVersion: -1}) },
		func() (int64, error) { return b.Put(ctx, k, []byte("second"), PutOptions{IfVersion: -1}) },
		func() (int64, error) {
			return 0, b.update("half", 0, func(tx *bolt.Tx) error {
				if err := tx.Bucket(bRecords).Put(junk, encRecord(1, 0, []byte("junk"))); err != nil {
					return err
				}
				return fmt.Errorf("half write: %w", ErrConflict)
			})
		},
		func() (int64, error) {
			return 0, b.update("boom", 0, func(tx *bolt.Tx) error {
				_ = tx.Bucket(bRecords).Put(junk, encRecord(1, 0, []byte("boom")))
				panic("boom")
			})
		},
		func() (int64, error) { return b.Append(ctx, lk, []byte("e"), 0, 0) },
		func() (int64, error) { return b.Add(ctx, ck, 1, 5, 0) },
	}
	for i, op := range ops {
		results[i] = make(chan result, 1)
		go func(i int, op func() (int64, error)) {
			n, err := op()
			results[i] <- result{n, err}
		}(i, op)
		waitQueued(t, b, i+1) // queued in this order
	}
	release()
	got := make([]result, len(ops))
	for i := range results {
		got[i] = <-results[i]
	}
	if got[0].err != nil || got[0].n != 1 {
		t.Fatalf("create = %d, %v; want version 1", got[0].n, got[0].err)
	}
	if !errors.Is(got[1].err, ErrConflict) {
		t.Fatalf("second create = %d, %v; want ErrConflict", got[1].n, got[1].err)
	}
	if !errors.Is(got[2].err, ErrConflict) || !errors.Is(got[2].err, core.ErrConflict) {
		t.Fatalf("half write = %v; want its own ErrConflict", got[2].err)
	}
	if !errors.Is(got[3].err, core.ErrInternal) || errors.Is(got[3].err, ErrConflict) {
		t.Fatalf("panicking write = %v; want an internal error of its own", got[3].err)
	}
	if got[4].err != nil || got[4].n != 1 {
		t.Fatalf("append = %d, %v; want seq 1", got[4].n, got[4].err)
	}
	if got[5].err != nil || got[5].n != 1 {
		t.Fatalf("add = %d, %v; want 1", got[5].n, got[5].err)
	}
	if n := b.commits.Load() - before; n != 2 {
		t.Fatalf("%d commits for the held write and the group; want 2", n)
	}
	if it, err := b.Get(ctx, k); err != nil || string(it.Value) != "first" || it.Version != 1 {
		t.Fatalf("record = %+v, %v; want first at version 1", it, err)
	}
	if err := b.view("check", func(tx *bolt.Tx) error {
		if v := tx.Bucket(bRecords).Get(junk); v != nil {
			return fmt.Errorf("a failed write's record survived: %q", v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Add(ctx, ck, 1, 5, 0); err != nil || v != 2 {
		t.Fatalf("add after the group = %d, %v; want 2 (the committer lives)", v, err)
	}
}

// TestBoltCloseWithQueuedWrites closes the store while 16 writes wait
// behind a held committer: Close refuses writes from then on
// (ErrUnavailable), commits the 16 queued ones (all there after reopening)
// and returns.
func TestBoltCloseWithQueuedWrites(t *testing.T) {
	t.Parallel()
	const n = 16
	dir := t.TempDir()
	b := openGroupBolt(t, dir)
	ctx := context.Background()
	release := holdCommitter(t, b)
	defer release()
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			_, err := b.Put(ctx, Key{Kind: "rec", Owner: "o", ID: strconv.Itoa(i)}, []byte("v"), PutOptions{})
			errs <- err
		}(i)
	}
	waitQueued(t, b, n)
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	for {
		b.mu.Lock()
		c := b.closed
		b.mu.Unlock()
		if c {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := b.Put(ctx, Key{Kind: "rec", Owner: "o", ID: "late"}, []byte("v"), PutOptions{}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("put after Close = %v; want ErrUnavailable", err)
	}
	release()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testscale.D(20 * time.Second)):
		t.Fatal("Close hangs with writes queued")
	}
	for i := 0; i < n; i++ {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatalf("queued write: %v; want committed", err)
			}
		case <-time.After(testscale.D(20 * time.Second)):
			t.Fatalf("%d queued writes not answered after Close", n-i)
		}
	}
	b = openGroupBolt(t, dir)
	defer b.Close()
	items, err := b.List(ctx, "rec", "o", "", 0)
	if err != nil || len(items) != n {
		t.Fatalf("after reopen: %d records, %v; want the %d queued ones", len(items), err, n)
	}
}
