package state

import (
	"context"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Lazy appends (AppendLazy): like lazy Puts (bolt_lazy.go), the committer
// applies them to an in-memory overlay of logs and answers at once, with
// no fsync; Range reads the overlay after the file; every transaction the
// committer runs writes the overlay first, and the flusher makes it run
// one within LazyFlush. A crash loses at most the lazy appends of the last
// LazyFlush (and none that a later synced write of this store followed).

// maxPendingLogBytes bounds the data the log overlay holds: past it the
// committer flushes at once.
const maxPendingLogBytes = 4 << 20

// LazyAppender is a Store whose appends may answer before they are
// durable, for log entries whose loss on a crash costs little (a session's
// call log): visible at once to every later Range of this process, made
// durable within the backend's flush interval (BoltOptions.LazyFlush,
// default 1 s) or by its next ordinary write.
type LazyAppender interface {
	AppendLazy(ctx context.Context, k Key, data []byte, maxLen int, ttl time.Duration) (int64, error)
}

// AppendWith is st.Append, lazy (LazyAppender) when lazy is set and st
// can.
func AppendWith(ctx context.Context, st Store, k Key, data []byte, maxLen int, ttl time.Duration, lazy bool) (int64, error) {
	if la, ok := st.(LazyAppender); ok && lazy {
		return la.AppendLazy(ctx, k, data, maxLen, ttl)
	}
	return st.Append(ctx, k, data, maxLen, ttl)
}

// lazyAppend is the payload of a queued lazy Append.
type lazyAppend struct {
	ek     []byte
	data   []byte
	maxLen int
	ttl    time.Duration
	seq    int64 // set by the committer before it answers
}

// pendLog is one log's overlay: the bounds it will have once written and
// its entries not yet in the file. fresh: the file held no live log when
// the first entry came (missing or expired), so the file's entries are
// not part of it.
type pendLog struct {
	ek                   []byte
	fresh                bool
	first, last, expires int64
	maxLen               int
	entries              []Entry
}

// AppendLazy is Append answering before the entry is durable (see
// LazyAppender). Like a lazy Put (lazyDirect), the caller adds it to the
// overlay itself unless the log has writes queued in the committer.
func (b *Bolt) AppendLazy(_ context.Context, k Key, data []byte, maxLen int, ttl time.Duration) (int64, error) {
	maxLen, err := b.checkAppend(k, data, maxLen)
	if err != nil {
		return 0, err
	}
	la := &lazyAppend{ek: encKey(k), data: append([]byte(nil), data...), maxLen: maxLen, ttl: ttl}
	if err := b.appendDirect(la); err != nil {
		return 0, err
	}
	b.mu.Lock()
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
	return la.seq, nil
}

// appendDirect adds lazy append la to the overlay in the caller's
// goroutine, or queues it behind the log's writes queued in the committer
// (see lazyDirect, whose reasoning holds for logs alike).
func (b *Bolt) appendDirect(la *lazyAppend) error {
	ek, busy := string(la.ek), "l"+string(la.ek)
	for range directTries {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return fmt.Errorf("state: append on %s: closed: %w", b.path, ErrUnavailable)
		}
		if b.busy[busy] > 0 {
			b.mu.Unlock()
			break
		}
		if p := b.pendLogs[ek]; p != nil {
			b.addToLogLocked(p, la, time.Now())
			b.mu.Unlock()
			return nil
		}
		seq := b.commits.Load()
		b.mu.Unlock()
		var m logMeta
		var ok bool
		err := b.db.View(func(tx *bolt.Tx) error {
			m, ok = decLogMeta(tx.Bucket(bLogMeta).Get(la.ek))
			return nil
		})
		if err != nil {
			return b.mapErr("append", err)
		}
		b.mu.Lock()
		if b.closed || b.busy[busy] > 0 || b.pendLogs[ek] != nil || b.commits.Load() != seq {
			b.mu.Unlock()
			continue
		}
		now := time.Now()
		b.addToLogLocked(b.newPendLogLocked(la.ek, m, ok, now), la, now)
		b.mu.Unlock()
		return nil
	}
	return b.enqueue(&writeOp{name: "append", size: len(la.data), lazyLog: la, busy: busy, done: make(chan error, 1)})
}

// newPendLogLocked starts the overlay of log ek on top of its committed
// meta m (ok: the file has it); b.mu is held.
func (b *Bolt) newPendLogLocked(ek []byte, m logMeta, ok bool, now time.Time) *pendLog {
	p := &pendLog{ek: ek, fresh: true, first: 1}
	if ok && (m.expires == 0 || now.UnixNano() < m.expires) {
		p.fresh, p.first, p.last = false, m.first, m.last
	}
	b.pendLogs[string(ek)] = p
	return p
}

// addToLogLocked adds lazy append la to the log's overlay p; b.mu is held.
func (b *Bolt) addToLogLocked(p *pendLog, la *lazyAppend, now time.Time) {
	p.last++
	p.entries = append(p.entries, Entry{Seq: p.last, Data: la.data})
	p.maxLen, p.expires = la.maxLen, expiryNano(now, la.ttl)
	for p.last-p.first+1 > int64(p.maxLen) {
		p.first++
	}
	for len(p.entries) > 0 && p.entries[0].Seq < p.first {
		b.pendLogBytes -= len(p.entries[0].Data)
		p.entries = p.entries[1:]
	}
	b.pendLogBytes += len(la.data)
	if b.pendLogBytes >= maxPendingLogBytes && !b.flushDue {
		b.flushDue = true
		b.wake.Signal()
	}
	la.seq = p.last
}

// writePendingLogs writes the log overlay into tx, as Append would.
func writePendingLogs(tx *bolt.Tx, logs []pendLog) error {
	metas, lbs := tx.Bucket(bLogMeta), tx.Bucket(bLogs)
	for _, p := range logs {
		old, ok := decLogMeta(metas.Get(p.ek))
		if ok {
			if err := dropExp(tx, expLog, p.ek, old.expires); err != nil {
				return err
			}
		}
		if p.fresh {
			if err := lbs.DeleteBucket(p.ek); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
				return err
			}
			ok = false
		}
		lb, err := lbs.CreateBucketIfNotExists(p.ek)
		if err != nil {
			return err
		}
		for _, e := range p.entries {
			if err := lb.Put(be64(e.Seq), e.Data); err != nil {
				return err
			}
		}
		if ok {
			for s := old.first; s < p.first; s++ {
				if err := lb.Delete(be64(s)); err != nil {
					return err
				}
			}
		}
		if err := metas.Put(p.ek, logMeta{first: p.first, last: p.last, expires: p.expires}.enc()); err != nil {
			return err
		}
		if err := addExp(tx, expLog, p.ek, p.expires); err != nil {
			return err
		}
	}
	return nil
}

// pendingLog returns a copy of the overlay of log ek and the overlay's
// generation (nil when the file decides).
func (b *Bolt) pendingLog(ek []byte) (*pendLog, uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pendLogs[string(ek)]
	if p == nil {
		return nil, b.pendGen
	}
	c := *p
	c.entries = append([]Entry(nil), p.entries...)
	return &c, b.pendGen
}

// overlayGen is the overlay's generation: it changes whenever the
// overlay was committed and cleared.
func (b *Bolt) overlayGen() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pendGen
}

// mergeLog is Range's answer from the file's entries of a log (with its
// meta, valid when live) and the overlay p: the file's entries the overlay
// has not trimmed (none when the overlay starts a fresh log), then the
// overlay's entries after the file's last, all with Seq > after, at most
// limit.
func mergeLog(file []Entry, m logMeta, valid bool, p *pendLog, after int64, limit int) []Entry {
	var out []Entry
	last := int64(0)
	if valid && !(p.fresh && m.last < p.first) {
		for _, e := range file {
			if e.Seq >= p.first {
				out = append(out, e)
			}
		}
		last = m.last
	}
	for _, e := range p.entries {
		if e.Seq > after && e.Seq > last {
			out = append(out, e)
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}
