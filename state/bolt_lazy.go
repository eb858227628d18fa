package state

import (
	"bytes"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Lazy writes (PutOptions.Lazy). The committer, the only writer, applies a
// lazy Put to an in-memory overlay (pending) instead of a transaction and
// answers at once: no fsync. Reads consult the overlay before the file.
// Every transaction the committer runs writes the overlay first (so other
// writes see and build on it), and a flusher makes the committer run one
// every LazyFlush while the overlay is not empty. A crash loses at most
// the lazy writes of the last LazyFlush; Close commits them.

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

// applyLazy runs the lazy puts of a group against the overlay and the
// committed file (one read transaction) and answers them.
func (b *Bolt) applyLazy(ops []*writeOp) {
	if len(ops) == 0 {
		return
	}
	tx, err := b.db.Begin(false)
	if err != nil {
		for _, w := range ops {
			w.done <- err
		}
		return
	}
	defer func() { _ = tx.Rollback() }()
	recs := tx.Bucket(bRecords)
	now := time.Now()
	for _, w := range ops {
		lp := w.lazy
		b.mu.Lock()
		raw, inPending := b.pending[string(lp.ek)]
		b.mu.Unlock()
		if !inPending {
			raw = recs.Get(lp.ek)
		}
		old, ok := decRecord(raw, now)
		switch {
		case lp.opt.IfVersion == -1 && ok:
			w.done <- fmt.Errorf("create %s/%s: %w", lp.key.Kind, lp.key.ID, ErrConflict)
			continue
		case lp.opt.IfVersion > 0 && (!ok || old.version != lp.opt.IfVersion):
			w.done <- fmt.Errorf("update %s/%s: %w", lp.key.Kind, lp.key.ID, ErrConflict)
			continue
		}
		lp.version = 1
		if ok {
			lp.version = old.version + 1
		}
		enc := encRecord(lp.version, expiryNano(now, lp.opt.TTL), lp.value)
		b.mu.Lock()
		b.pending[string(lp.ek)] = enc
		if len(b.pending) >= maxPending {
			b.flushDue = true
		}
		b.mu.Unlock()
		w.done <- nil
	}
}

// writePending writes the overlay entries pend into tx, as Put would.
func writePending(tx *bolt.Tx, pend []pendingEntry) error {
	recs := tx.Bucket(bRecords)
	for _, p := range pend {
		if raw := recs.Get(p.ek); raw != nil {
			if err := dropExp(tx, expRecord, p.ek, rawExpires(raw)); err != nil {
				return err
			}
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

// takePending returns the overlay's entries (the committer alone changes
// the overlay, so they stay current until it clears them).
func (b *Bolt) takePending() []pendingEntry {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushDue = false
	out := make([]pendingEntry, 0, len(b.pending))
	for k, raw := range b.pending {
		out = append(out, pendingEntry{ek: []byte(k), raw: raw})
	}
	return out
}

// clearPending forgets the overlay once its entries are committed.
func (b *Bolt) clearPending() {
	b.mu.Lock()
	clear(b.pending)
	b.mu.Unlock()
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
			if len(b.pending) > 0 {
				b.flushDue = true
				b.wake.Signal()
			}
			b.mu.Unlock()
		}
	}
}
