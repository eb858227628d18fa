package state

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Lazy writes (PutOptions.Lazy). A lazy Put goes to an in-memory overlay
// (pending) instead of a transaction and answers at once: no fsync, and no
// wait for the committer either. The writer applies it itself, under mu,
// on top of the overlay or (when the overlay does not hold the record) of
// the committed file (lazyDirect); only a lazy write of a record that has
// writes queued or running in the committer (busy) is queued behind them,
// so the order of writes of one record is the order they were made in.
// Reads consult the overlay before the file. Every transaction the
// committer runs writes the overlay first (so other writes see and build
// on it) and, once committed, drops from the overlay what it wrote and
// nothing written since; a flusher makes the committer run one every
// LazyFlush while the overlay is not empty. A crash loses at most the lazy
// writes of the last LazyFlush; Close commits them.

// defaultLazyFlush is how long a lazy write may stay only in memory.
const defaultLazyFlush = time.Second

// maxPending bounds the overlay: past it the committer flushes at once.
const maxPending = 4096

// lazyPut is the payload of a queued lazy Put.
type lazyPut struct {
	key     Key
	ek      []byte
	value   []byte
	opt     PutOptions
	version int64 // set by the committer before it answers
	// del makes it a lazy Delete (DeleteLazy): the overlay holds a
	// tombstone (nil) and opt.IfVersion is Delete's condition.
	del bool
}

// pendingGet returns the overlay's raw record for ek (nil, false when the
// file decides).
func (b *Bolt) pendingGet(ek []byte) ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	raw, ok := b.pending[string(ek)]
	return raw, ok
}

// pendingPrefix returns the overlay entries whose key starts with prefix
// and sorts after start, in key order.
func (b *Bolt) pendingPrefix(prefix, start []byte) []pendingEntry {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []pendingEntry
	for k, raw := range b.pending {
		if hasPrefix([]byte(k), prefix) && bytes.Compare([]byte(k), start) >= 0 {
			out = append(out, pendingEntry{ek: []byte(k), raw: raw})
		}
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].ek, out[j].ek) < 0 })
	return out
}

// pendingEntry is one overlay record.
type pendingEntry struct {
	ek, raw []byte
}

// applyLazy runs the lazy writes the committer was handed (their record
// or log was busy) against the overlay and the committed file (one read
// transaction), and answers them.
func (b *Bolt) applyLazy(ops []*writeOp) {
	if len(ops) == 0 {
		return
	}
	b.lazyQueued.Add(int64(len(ops)))
	tx, err := b.db.Begin(false)
	if err != nil {
		for _, w := range ops {
			b.answer(w, err)
		}
		return
	}
	defer func() { _ = tx.Rollback() }()
	recs := tx.Bucket(bRecords)
	now := time.Now()
	for _, w := range ops {
		if w.lazyLog != nil {
			b.mu.Lock()
			p := b.pendLogs[string(w.lazyLog.ek)]
			if p == nil {
				m, ok := decLogMeta(tx.Bucket(bLogMeta).Get(w.lazyLog.ek))
				p = b.newPendLogLocked(w.lazyLog.ek, m, ok, now)
			}
			b.addToLogLocked(p, w.lazyLog, now)
			b.mu.Unlock()
			b.answer(w, nil)
			continue
		}
		lp := w.lazy
		b.mu.Lock()
		raw, inPending := b.pending[string(lp.ek)]
		b.mu.Unlock()
		if !inPending {
			raw = recs.Get(lp.ek)
		}
		old, ok := decRecord(raw, now)
		b.mu.Lock()
		err := b.putLocked(lp, old.version, ok, now)
		b.mu.Unlock()
		b.answer(w, err)
	}
}

// putLocked applies lazy write lp to the overlay, on top of the record's
// current version (ok: it exists, live), checking lp's condition; b.mu is
// held.
func (b *Bolt) putLocked(lp *lazyPut, version int64, ok bool, now time.Time) error {
	if lp.del {
		if lp.opt.IfVersion > 0 && (!ok || version != lp.opt.IfVersion) {
			return fmt.Errorf("delete %s/%s: %w", lp.key.Kind, lp.key.ID, ErrConflict)
		}
		b.pending[string(lp.ek)] = nil
		return nil
	}
	switch {
	case lp.opt.IfVersion == -1 && ok:
		return fmt.Errorf("create %s/%s: %w", lp.key.Kind, lp.key.ID, ErrConflict)
	case lp.opt.IfVersion > 0 && (!ok || version != lp.opt.IfVersion):
		return fmt.Errorf("update %s/%s: %w", lp.key.Kind, lp.key.ID, ErrConflict)
	}
	lp.version = 1
	if ok {
		lp.version = version + 1
	}
	b.pending[string(lp.ek)] = encRecord(lp.version, expiryNano(now, lp.opt.TTL), lp.value)
	if len(b.pending) >= maxPending && !b.flushDue {
		b.flushDue = true
		b.wake.Signal()
	}
	return nil
}

// directTries bounds how often a lazy write read the file while the
// committer committed before it queues instead.
const directTries = 3

// lazyDirect applies lazy write lp to the overlay in the caller's
// goroutine. queued is true when it went to the committer instead, behind
// the writes of its record queued there (or after directTries commits
// raced its read of the file).
//
// Why reading the file outside the committer is safe: a transaction
// writes a record only for a write of it (then busy until answered, and
// answered after the commit) or from the overlay (then the overlay holds
// it until that transaction has committed). So when the record is neither
// busy nor in the overlay, and no transaction committed during the read,
// the file held its latest version.
func (b *Bolt) lazyDirect(lp *lazyPut) (queued bool, err error) {
	ek, busy := string(lp.ek), "r"+string(lp.ek)
	for range directTries {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return false, fmt.Errorf("state: %s on %s: closed: %w", lazyName(lp), b.path, ErrUnavailable)
		}
		if b.busy[busy] > 0 {
			b.mu.Unlock()
			break
		}
		if raw, ok := b.pending[ek]; ok {
			now := time.Now()
			old, live := decRecord(raw, now)
			err := b.putLocked(lp, old.version, live, now)
			b.mu.Unlock()
			return false, err
		}
		seq := b.commits.Load()
		b.mu.Unlock()
		var version int64
		var live bool
		err := b.db.View(func(tx *bolt.Tx) error {
			old, ok := decRecord(tx.Bucket(bRecords).Get(lp.ek), time.Now())
			version, live = old.version, ok
			return nil
		})
		if err != nil {
			return false, b.mapErr(lazyName(lp), err)
		}
		b.mu.Lock()
		_, inPending := b.pending[ek]
		if b.closed || b.busy[busy] > 0 || inPending || b.commits.Load() != seq {
			b.mu.Unlock()
			continue
		}
		err = b.putLocked(lp, version, live, time.Now())
		b.mu.Unlock()
		return false, err
	}
	return true, b.enqueue(&writeOp{name: lazyName(lp), size: len(lp.value), lazy: lp, busy: busy, done: make(chan error, 1)})
}

// lazyName names lp's operation in errors.
func lazyName(lp *lazyPut) string {
	if lp.del {
		return "delete"
	}
	return "put"
}

// pendingSet is the overlay as the committer writes it: records and logs.
type pendingSet struct {
	puts []pendingEntry
	logs []pendLog
}

// empty reports whether the set holds nothing.
func (s pendingSet) empty() bool { return len(s.puts) == 0 && len(s.logs) == 0 }

// writePending writes the overlay pend into tx, as Put and Append would.
func writePending(tx *bolt.Tx, pend pendingSet) error {
	if err := writePendingLogs(tx, pend.logs); err != nil {
		return err
	}
	recs := tx.Bucket(bRecords)
	for _, p := range pend.puts {
		if raw := recs.Get(p.ek); raw != nil {
			if err := dropExp(tx, expRecord, p.ek, rawExpires(raw)); err != nil {
				return err
			}
		}
		if p.raw == nil { // a lazy Delete's tombstone
			if err := recs.Delete(p.ek); err != nil {
				return err
			}
			continue
		}
		if err := recs.Put(p.ek, p.raw); err != nil {
			return err
		}
		if err := addExp(tx, expRecord, p.ek, rawExpires(p.raw)); err != nil {
			return err
		}
	}
	return nil
}

// takePending returns the overlay's entries as they are now: the
// committer writes them, then clearPending drops them (and nothing written
// meanwhile).
func (b *Bolt) takePending() pendingSet {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushDue = false
	var out pendingSet
	for k, raw := range b.pending {
		out.puts = append(out.puts, pendingEntry{ek: []byte(k), raw: raw})
	}
	for _, p := range b.pendLogs {
		out.logs = append(out.logs, *p)
	}
	return out
}

// clearPending forgets the overlay entries of pend once a transaction
// carrying them has committed. A record written again since keeps its
// new value (values are never shared, so identity tells); a log appended
// to since keeps the entries after those committed, on top of the file.
func (b *Bolt) clearPending(pend pendingSet) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range pend.puts {
		if cur, ok := b.pending[string(p.ek)]; ok && sameBytes(cur, p.raw) {
			delete(b.pending, string(p.ek))
		}
	}
	for _, l := range pend.logs {
		p := b.pendLogs[string(l.ek)]
		if p == nil {
			continue
		}
		if p.last == l.last {
			delete(b.pendLogs, string(l.ek))
			continue
		}
		p.fresh = false // the file now holds the log up to l.last
		i := 0
		for i < len(p.entries) && p.entries[i].Seq <= l.last {
			i++
		}
		p.entries = append([]Entry(nil), p.entries[i:]...)
	}
	b.pendLogBytes = 0
	for _, p := range b.pendLogs {
		for _, e := range p.entries {
			b.pendLogBytes += len(e.Data)
		}
	}
	b.pendGen++
}

// sameBytes reports whether a and b are the same slice (not merely equal
// bytes); two nils (tombstones) are the same.
func sameBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0]
}

// flushLoop asks the committer to commit the overlay every every while
// it holds entries.
func (b *Bolt) flushLoop(every time.Duration) {
	defer b.sweeper.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-b.done:
			return
		case <-t.C:
			b.mu.Lock()
			if len(b.pending) > 0 || len(b.pendLogs) > 0 {
				b.flushDue = true
				b.wake.Signal()
			}
			b.mu.Unlock()
		}
	}
}

// LazyDeleter is a Store whose Delete may answer before it is durable,
// for records whose survival past a crash costs little (they expire):
// gone at once for every later read of this process, made durable within
// the backend's flush interval or by its next ordinary write.
type LazyDeleter interface {
	DeleteLazy(ctx context.Context, k Key, ifVersion int64) error
}

// DeleteWith is st.Delete, lazy (LazyDeleter) when lazy is set and st can.
func DeleteWith(ctx context.Context, st Store, k Key, ifVersion int64, lazy bool) error {
	if ld, ok := st.(LazyDeleter); ok && lazy {
		return ld.DeleteLazy(ctx, k, ifVersion)
	}
	return st.Delete(ctx, k, ifVersion)
}

// DeleteLazy is Delete answering before it is durable (see LazyDeleter).
func (b *Bolt) DeleteLazy(_ context.Context, k Key, ifVersion int64) error {
	if err := b.isClosed("delete"); err != nil {
		return err
	}
	_, err := b.lazyDirect(&lazyPut{key: k, ek: encKey(k), opt: PutOptions{IfVersion: ifVersion}, del: true})
	return err
}

// LazyQueued is how many lazy writes (puts, deletes, appends) since the
// store opened waited for the committer because their record or log had
// writes queued there; the others went straight to the overlay.
func (b *Bolt) LazyQueued() int64 { return b.lazyQueued.Load() }
