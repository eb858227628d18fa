package state

import (
	"fmt"
	"runtime"

	bolt "go.etcd.io/bbolt"

	"github.com/airlock-dev/airlock/core"
)

// Group commit. Every write of a Bolt goes through one committer goroutine
// that runs all writes queued at that moment in one bbolt transaction: one
// commit (two fdatasyncs) for the group instead of one per write. A lone
// write waits for nothing but its own commit; under load, writes queue
// while the previous group syncs and go together in the next.
//
// Not bbolt's own db.Batch: it holds every batch open for MaxBatchDelay
// (10 ms by default) unless MaxBatchSize callers arrive first, so a lone
// interactive write pays up to that delay on top of its fsync, and the
// delay is a guess at the load rather than the load itself. Draining
// what is already queued needs no timer: the group is exactly what arrived
// during the previous commit.
//
// Like db.Batch, an op's fn may run more than once (only the last run's
// transaction commits), so fns recompute what they report on every run
// and keep side effects outside the transaction after update returns.

// Group bounds: a group takes at most maxGroupOps writes and, after its
// first, stops before passing maxGroupBytes of values, so one commit's
// dirty pages stay bounded.
const (
	maxGroupOps   = 256
	maxGroupBytes = 16 << 20
)

// writeOp is one queued write: fn runs in the group's transaction and the
// outcome (fn's error, or the commit's) is sent on done.
type writeOp struct {
	name    string
	size    int
	fn      func(tx *bolt.Tx) error
	lazy    *lazyPut    // a lazy Put, applied to the overlay instead of fn (bolt_lazy.go)
	lazyLog *lazyAppend // a lazy Append, likewise (bolt_lazylog.go)
	// busy names the record ("r"+encKey) or log ("l"+encKey) the op
	// writes, when it writes one only: from enqueue until it is answered
	// a lazy write of it queues behind it instead of going straight to the
	// overlay (see lazyDirect).
	busy string
	done chan error
}

// update runs fn in a write transaction, mapping storage failures to
// ErrUnavailable (the transaction is rolled back: nothing was written).
// Errors of this package returned by fn pass through. size is about how
// many bytes fn writes (the group's byte budget). fn may run more than
// once; only its last run is committed.
func (b *Bolt) update(op string, size int, fn func(tx *bolt.Tx) error) error {
	return b.enqueue(&writeOp{name: op, size: size, fn: fn, done: make(chan error, 1)})
}

// updateOne is update for a write of the one record or log busy names
// ("r" or "l" and its encKey): lazy writes of it wait for it.
func (b *Bolt) updateOne(op, busy string, size int, fn func(tx *bolt.Tx) error) error {
	return b.enqueue(&writeOp{name: op, size: size, fn: fn, busy: busy, done: make(chan error, 1)})
}

// enqueue hands w to the committer and waits for its answer.
func (b *Bolt) enqueue(w *writeOp) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return fmt.Errorf("state: %s on %s: closed: %w", w.name, b.path, ErrUnavailable)
	}
	if w.busy != "" {
		b.busy[w.busy]++
	}
	b.queued.Add(1)
	b.queue = append(b.queue, w)
	b.wake.Signal()
	b.mu.Unlock()
	return b.mapErr(w.name, <-w.done)
}

// answer sends w its outcome, after its record or log stops being busy.
// The committer answers only after the commit that carried w (and the
// overlay's clearing), so a lazy write that sees it not busy reads the
// file with w in it.
func (b *Bolt) answer(w *writeOp, err error) {
	if w.busy != "" {
		b.mu.Lock()
		if b.busy[w.busy]--; b.busy[w.busy] <= 0 {
			delete(b.busy, w.busy)
		}
		b.mu.Unlock()
	}
	w.done <- err
}

// commitLoop is the committer: it runs queued writes group by group until
// Close, then finishes what is queued and returns.
func (b *Bolt) commitLoop() {
	defer b.committer.Done()
	for {
		g, open := b.takeGroup()
		var lazy []*writeOp
		for i := 0; i < len(g); {
			if g[i].lazy != nil || g[i].lazyLog != nil {
				lazy = append(lazy, g[i])
				g = append(g[:i], g[i+1:]...)
				continue
			}
			i++
		}
		b.applyLazy(lazy)
		if len(g) > 0 || b.flushWanted() || !open {
			b.commitGroup(g)
		}
		if !open {
			return
		}
		// The writers just answered typically queue their next write
		// within microseconds; one yield lets them (they are runnable on
		// this P) instead of committing the first alone and the rest one
		// fsync later. Not a wait: with nothing runnable it returns at once.
		runtime.Gosched()
	}
}

// flushWanted reports whether the lazy overlay should be committed now.
func (b *Bolt) flushWanted() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.flushDue && (len(b.pending) > 0 || len(b.pendLogs) > 0)
}

// takeGroup waits for a queued write (or a due flush of the lazy overlay)
// and returns it with the writes queued behind it, within the group
// bounds; open is false once closed with nothing queued.
func (b *Bolt) takeGroup() (g []*writeOp, open bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.queue) == 0 {
		if b.closed {
			return nil, false
		}
		if b.flushDue {
			return nil, true
		}
		b.wake.Wait()
	}
	n, size := 1, b.queue[0].size
	for n < len(b.queue) && n < maxGroupOps && size+b.queue[n].size <= maxGroupBytes {
		size += b.queue[n].size
		n++
	}
	g = append([]*writeOp(nil), b.queue[:n]...)
	rest := copy(b.queue, b.queue[n:])
	clear(b.queue[rest:])
	b.queue = b.queue[:rest]
	return g, true
}

// commitGroup runs the ops of g in order in one transaction and answers
// each. When an op's fn fails the transaction is rolled back: an op that
// failed first in its transaction saw only committed state, so its error
// is its own and is its answer (nothing it wrote survives); one that failed
// behind others is set aside; the rest run again without it. Once the rest
// has committed, the set-aside ops run the same way as a group of their
// own. Each round answers at least its first op, so it ends.
//
// Every transaction first writes the lazy overlay (bolt_lazy.go), which is
// forgotten once a transaction carrying it has committed; with no op at
// all, commitGroup commits just the overlay.
func (b *Bolt) commitGroup(g []*writeOp) {
	pend := b.takePending()
	if len(g) == 0 {
		if !pend.empty() && b.db.Update(func(tx *bolt.Tx) error {
			if err := writePending(tx, pend); err != nil {
				return err
			}
			b.beforeCommit()
			return nil
		}) == nil {
			b.commits.Add(1)
			b.clearPending(pend)
		}
		return
	}
	for len(g) > 0 {
		var later []*writeOp
		for len(g) > 0 {
			failed, ferr := -1, error(nil)
			err := b.db.Update(func(tx *bolt.Tx) error {
				if err := writePending(tx, pend); err != nil {
					return err
				}
				for i, w := range g {
					if err := callOp(w, tx); err != nil {
						failed, ferr = i, err
						return err
					}
				}
				b.beforeCommit()
				return nil
			})
			if failed < 0 {
				if err == nil {
					b.commits.Add(1)
					if !pend.empty() {
						b.clearPending(pend)
						pend = pendingSet{}
					}
				}
				for _, w := range g {
					b.answer(w, err)
				}
				break
			}
			w := g[failed]
			g = append(g[:failed], g[failed+1:]...)
			if failed == 0 {
				b.answer(w, ferr)
			} else {
				later = append(later, w)
			}
		}
		g = later
	}
}

// callOp runs one op's fn, turning a panic into that op's error (with
// core.ErrInternal: a bug, not an outage) so the committer lives on and
// the transaction is rolled back.
func callOp(w *writeOp, tx *bolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = core.E("state", core.ErrInternal, fmt.Errorf("panic in %s transaction: %v", w.name, p))
		}
	}()
	return w.fn(tx)
}

// Commits is how many write transactions (each a disk sync) the store has
// committed since it opened.
func (b *Bolt) Commits() int64 { return b.commits.Load() }

// QueuedWrites is how many writes since the store opened were handed to
// the committer and waited for it (a commit, or the lazy writes of a busy
// record or log); lazy writes that went straight to the overlay are not
// counted.
func (b *Bolt) QueuedWrites() int64 { return b.queued.Load() }

// beforeCommit runs the test hook (export_test.go) in a transaction about
// to commit.
func (b *Bolt) beforeCommit() {
	if h := b.commitHook.Load(); h != nil {
		(*h)()
	}
}
