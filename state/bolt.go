package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/airlock-dev/airlock/core"
)

// BoltFile is the file name OpenBolt uses inside a directory.
const BoltFile = "state.db"

// BoltOptions tunes OpenBoltWith; the zero value gives OpenBolt's
// defaults.
type BoltOptions struct {
	// LockTimeout bounds the wait for the file lock another process
	// holds; default 1s.
	LockTimeout time.Duration
	// SweepEvery is how often expired records, logs and counters are
	// deleted from disk (they are invisible from their expiry on
	// regardless); default 1m, negative disables the sweeper.
	SweepEvery time.Duration
	// LazyFlush is the longest a lazy write (PutOptions.Lazy) stays only
	// in memory, the most a crash loses; default 1s.
	LazyFlush time.Duration
}

// Bolt is the embedded on-disk Store (go.etcd.io/bbolt) for a single
// `serve` process. The file is locked while open: a second process opening
// it fails within LockTimeout. Expired entries are hidden on read and
// removed by a background sweeper; Range waits are woken in-process by
// Append. Values and log entries are bounded by MaxValueSize; TTLs are not
// bounded. Writes of concurrent callers are group-committed: one
// transaction and one fsync for all writes queued at that moment (see
// bolt_commit.go).
type Bolt struct {
	db   *bolt.DB
	path string

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every append
	done     chan struct{} // closed by Close
	closed   bool
	queue    []*writeOp          // writes waiting for the committer
	pending  map[string][]byte   // lazy writes not yet committed, by encKey (bolt_lazy.go)
	pendLogs map[string]*pendLog // lazy appends not yet committed, by encKey (bolt_lazylog.go)
	// pendLogBytes is the data pendLogs holds; pendGen counts the
	// overlay's commits (a Range that saw it change reads again).
	pendLogBytes int
	pendGen      uint64
	flushDue     bool       // the committer should commit pending now
	wake         *sync.Cond // on mu: signalled when queue grows or closed is set
	// busy counts, per record ("r"+encKey) or log ("l"+encKey), the writes
	// of it queued or running in the committer (bolt_lazy.go).
	busy       map[string]int
	commits    atomic.Int64
	lazyQueued atomic.Int64 // lazy writes that waited for the committer
	queued     atomic.Int64 // writes handed to the committer
	commitHook atomic.Pointer[func()]
	sweeper    sync.WaitGroup
	committer  sync.WaitGroup
}

// Bucket names. Records, counters and log metadata are keyed by encKey;
// each log's entries live in a nested bucket of bLogs keyed by encKey, with
// 8-byte big-endian sequence numbers as keys. bExp indexes every expiring
// thing by (expiry, type, encKey) so the sweeper reads only what is due.
var (
	bRecords  = []byte("records")
	bLogs     = []byte("logs")
	bLogMeta  = []byte("logmeta")
	bCounters = []byte("counters")
	bExp      = []byte("expiry")
)

// Expiry index types.
const (
	expRecord  byte = 'r'
	expLog     byte = 'l'
	expCounter byte = 'c'
)

// OpenBolt opens (creating it and its directory when missing) the Bolt
// store at path; when path is an existing directory the file is
// path/state.db. Another process holding the file makes it fail after
// about a second with an error naming the path (wrapping ErrUnavailable).
func OpenBolt(path string) (*Bolt, error) { return OpenBoltWith(path, BoltOptions{}) }

// OpenBoltWith is OpenBolt with options.
func OpenBoltWith(path string, opt BoltOptions) (*Bolt, error) {
	if path == "" {
		return nil, fmt.Errorf("state: open bolt: empty path")
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, BoltFile)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("state: create data directory for %s: %w", path, err)
	}
	if opt.LockTimeout <= 0 {
		opt.LockTimeout = time.Second
	}
	if opt.SweepEvery == 0 {
		opt.SweepEvery = time.Minute
	}
	if opt.LazyFlush <= 0 {
		opt.LazyFlush = defaultLazyFlush
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opt.LockTimeout, NoFreelistSync: true,
		FreelistType: bolt.FreelistMapType})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("state: open %s: the file is locked by another process (is another airlock serve using this data directory?): %w", path, ErrUnavailable)
	}
	if err != nil {
		return nil, fmt.Errorf("state: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bRecords, bLogs, bLogMeta, bCounters, bExp} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("state: initialise %s: %w", path, err)
	}
	b := &Bolt{db: db, path: path, changed: make(chan struct{}), done: make(chan struct{}),
		pending: make(map[string][]byte), pendLogs: make(map[string]*pendLog), busy: make(map[string]int)}
	b.wake = sync.NewCond(&b.mu)
	b.committer.Add(1)
	go b.commitLoop()
	b.sweeper.Add(1)
	go b.flushLoop(opt.LazyFlush)
	if opt.SweepEvery > 0 {
		b.sweeper.Add(1)
		go b.sweepLoop(opt.SweepEvery)
	}
	return b, nil
}

// Path is the database file.
func (b *Bolt) Path() string { return b.path }

func (b *Bolt) view(op string, fn func(tx *bolt.Tx) error) error {
	return b.mapErr(op, b.db.View(fn))
}

func (b *Bolt) mapErr(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrConflict), errors.Is(err, ErrLimit),
		errors.Is(err, ErrTooLarge), errors.Is(err, ErrUnavailable):
		return err
	case errors.Is(err, core.ErrInternal): // a panic in a write (callOp)
		return fmt.Errorf("state: %s on %s: %w", op, b.path, err)
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		return fmt.Errorf("state: %s on %s: closed: %w", op, b.path, ErrUnavailable)
	default:
		return fmt.Errorf("state: %s on %s: %v: %w", op, b.path, err, ErrUnavailable)
	}
}

func (b *Bolt) isClosed(op string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return fmt.Errorf("state: %s on %s: closed: %w", op, b.path, ErrUnavailable)
	}
	return nil
}

// Put writes a record.
func (b *Bolt) Put(_ context.Context, k Key, value []byte, opt PutOptions) (int64, error) {
	if err := checkSize("put", k, len(value)); err != nil {
		return 0, err
	}
	if err := b.isClosed("put"); err != nil {
		return 0, err
	}
	ek := encKey(k)
	if opt.Lazy {
		lp := &lazyPut{key: k, ek: ek, value: append([]byte(nil), value...), opt: opt}
		if _, err := b.lazyDirect(lp); err != nil {
			return 0, err
		}
		return lp.version, nil
	}
	var v int64
	err := b.updateOne("put", "r"+string(ek), len(value), func(tx *bolt.Tx) error {
		now := time.Now()
		recs := tx.Bucket(bRecords)
		old, ok := decRecord(recs.Get(ek), now)
		switch {
		case opt.IfVersion == -1 && ok:
			return fmt.Errorf("create %s/%s: %w", k.Kind, k.ID, ErrConflict)
		case opt.IfVersion > 0 && (!ok || old.version != opt.IfVersion):
			return fmt.Errorf("update %s/%s: %w", k.Kind, k.ID, ErrConflict)
		}
		v = 1
		if ok {
			v = old.version + 1
		}
		if raw := recs.Get(ek); raw != nil {
			if err := dropExp(tx, expRecord, ek, rawExpires(raw)); err != nil {
				return err
			}
		}
		exp := expiryNano(now, opt.TTL)
		if err := recs.Put(ek, encRecord(v, exp, value)); err != nil {
			return err
		}
		return addExp(tx, expRecord, ek, exp)
	})
	if err != nil {
		return 0, err
	}
	return v, nil
}

// Get reads a record.
func (b *Bolt) Get(_ context.Context, k Key) (Item, error) {
	if err := b.isClosed("get"); err != nil {
		return Item{}, err
	}
	var it Item
	ek := encKey(k)
	if raw, ok := b.pendingGet(ek); ok {
		r, ok := decRecord(raw, time.Now())
		if !ok {
			return Item{}, fmt.Errorf("get %s/%s: %w", k.Kind, k.ID, ErrNotFound)
		}
		return r.item(k), nil
	}
	err := b.view("get", func(tx *bolt.Tx) error {
		r, ok := decRecord(tx.Bucket(bRecords).Get(ek), time.Now())
		if !ok {
			return fmt.Errorf("get %s/%s: %w", k.Kind, k.ID, ErrNotFound)
		}
		it = r.item(k)
		return nil
	})
	return it, err
}

// Delete removes a record.
func (b *Bolt) Delete(_ context.Context, k Key, ifVersion int64) error {
	if err := b.isClosed("delete"); err != nil {
		return err
	}
	ek := encKey(k)
	return b.updateOne("delete", "r"+string(ek), 0, func(tx *bolt.Tx) error {
		recs := tx.Bucket(bRecords)
		raw := recs.Get(ek)
		r, ok := decRecord(raw, time.Now())
		if ifVersion > 0 && (!ok || r.version != ifVersion) {
			return fmt.Errorf("delete %s/%s: %w", k.Kind, k.ID, ErrConflict)
		}
		if raw == nil {
			return nil
		}
		if err := dropExp(tx, expRecord, ek, rawExpires(raw)); err != nil {
			return err
		}
		return recs.Delete(ek)
	})
}

// List returns live records of kind and owner ordered by id.
func (b *Bolt) List(_ context.Context, kind, owner, after string, limit int) ([]Item, error) {
	if err := b.isClosed("list"); err != nil {
		return nil, err
	}
	prefix := encPrefix(kind, owner)
	var out []Item
	start := append(append([]byte(nil), prefix...), after...)
	pend := b.pendingPrefix(prefix, start) // before the transaction: see bolt_lazy.go
	err := b.view("list", func(tx *bolt.Tx) error {
		now := time.Now()
		c := tx.Bucket(bRecords).Cursor()
		dbKey, dbRaw := c.Seek(start)
		for {
			var key, raw []byte
			dbOK := dbKey != nil && hasPrefix(dbKey, prefix)
			switch {
			case len(pend) > 0 && (!dbOK || bytes.Compare(pend[0].ek, dbKey) <= 0):
				if dbOK && bytes.Equal(pend[0].ek, dbKey) { // the overlay wins
					dbKey, dbRaw = c.Next()
				}
				key, raw, pend = pend[0].ek, pend[0].raw, pend[1:]
			case dbOK:
				key, raw = dbKey, dbRaw
				dbKey, dbRaw = c.Next()
			default:
				return nil
			}
			id := string(key[len(prefix):])
			if after != "" && id <= after {
				continue
			}
			r, ok := decRecord(raw, now)
			if !ok {
				continue
			}
			out = append(out, r.item(Key{Kind: kind, Owner: owner, ID: id}))
			if limit > 0 && len(out) == limit {
				break
			}
		}
		return nil
	})
	return out, err
}

// checkAppend checks an append's size and that the store is open, and
// returns its length bound (DefaultMaxLogLen for none).
func (b *Bolt) checkAppend(k Key, data []byte, maxLen int) (int, error) {
	if err := checkSize("append", k, len(data)); err != nil {
		return 0, err
	}
	if err := b.isClosed("append"); err != nil {
		return 0, err
	}
	if maxLen <= 0 {
		maxLen = DefaultMaxLogLen
	}
	return maxLen, nil
}

// Append adds an entry to a log.
func (b *Bolt) Append(_ context.Context, k Key, data []byte, maxLen int, ttl time.Duration) (int64, error) {
	maxLen, err := b.checkAppend(k, data, maxLen)
	if err != nil {
		return 0, err
	}
	ek := encKey(k)
	var seq int64
	err = b.updateOne("append", "l"+string(ek), len(data), func(tx *bolt.Tx) error {
		now := time.Now()
		metas, logs := tx.Bucket(bLogMeta), tx.Bucket(bLogs)
		m, ok := decLogMeta(metas.Get(ek))
		if ok {
			if err := dropExp(tx, expLog, ek, m.expires); err != nil {
				return err
			}
			if m.expires != 0 && now.UnixNano() >= m.expires {
				// Expired, not yet swept: it starts over like a new log.
				if err := logs.DeleteBucket(ek); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
					return err
				}
				ok = false
			}
		}
		if !ok {
			m = logMeta{first: 1}
		}
		lb, err := logs.CreateBucketIfNotExists(ek)
		if err != nil {
			return err
		}
		m.last++
		if err := lb.Put(be64(m.last), data); err != nil {
			return err
		}
		for m.last-m.first+1 > int64(maxLen) {
			if err := lb.Delete(be64(m.first)); err != nil {
				return err
			}
			m.first++
		}
		m.expires = expiryNano(now, ttl)
		seq = m.last
		if err := metas.Put(ek, m.enc()); err != nil {
			return err
		}
		return addExp(tx, expLog, ek, m.expires)
	})
	if err != nil {
		return 0, err
	}
	b.mu.Lock()
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
	return seq, nil
}

// Range reads entries after a sequence number, waiting up to wait for an
// Append of this process.
func (b *Bolt) Range(ctx context.Context, k Key, after int64, limit int, wait time.Duration) ([]Entry, error) {
	deadline := time.Now().Add(wait)
	ek := encKey(k)
	rereads := 0
	for {
		b.mu.Lock()
		changed, closed := b.changed, b.closed
		b.mu.Unlock()
		if closed {
			return nil, fmt.Errorf("state: range on %s: closed: %w", b.path, ErrUnavailable)
		}
		var out []Entry
		pend, gen := b.pendingLog(ek)
		err := b.view("range", func(tx *bolt.Tx) error {
			m, ok := decLogMeta(tx.Bucket(bLogMeta).Get(ek))
			valid := ok && (m.expires == 0 || time.Now().UnixNano() < m.expires)
			if pend != nil {
				defer func() { out = mergeLog(out, m, valid, pend, after, limit) }()
			}
			if !valid {
				return nil
			}
			lb := tx.Bucket(bLogs).Bucket(ek)
			if lb == nil {
				return nil
			}
			start := max(after+1, m.first)
			if pend != nil && !pend.fresh {
				start = max(start, pend.first)
			}
			c := lb.Cursor()
			for key, v := c.Seek(be64(start)); key != nil; key, v = c.Next() {
				out = append(out, Entry{Seq: unbe64(key), Data: append([]byte(nil), v...)})
				if limit > 0 && len(out) == limit {
					break
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		// The overlay committed meanwhile: its entries are in the file (the
		// merge skips them) unless a DeleteLog went with them, so read again
		// (a few times at most: a file that kept them is answered right).
		if pend != nil && rereads < 3 && b.overlayGen() != gen {
			rereads++
			continue
		}
		left := time.Until(deadline)
		if len(out) > 0 || wait <= 0 || left <= 0 {
			return out, nil
		}
		t := time.NewTimer(left)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("state: range %s/%s: %w", k.Kind, k.ID, ctx.Err())
		case <-b.done:
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// DeleteLog removes a log.
func (b *Bolt) DeleteLog(_ context.Context, k Key) error {
	if err := b.isClosed("delete log"); err != nil {
		return err
	}
	ek := encKey(k)
	return b.updateOne("delete log", "l"+string(ek), 0, func(tx *bolt.Tx) error {
		return deleteLog(tx, ek)
	})
}

func deleteLog(tx *bolt.Tx, ek []byte) error {
	metas := tx.Bucket(bLogMeta)
	if m, ok := decLogMeta(metas.Get(ek)); ok {
		if err := dropExp(tx, expLog, ek, m.expires); err != nil {
			return err
		}
		if err := metas.Delete(ek); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bLogs).DeleteBucket(ek); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
		return err
	}
	return nil
}

// Add changes a counter within a limit.
func (b *Bolt) Add(_ context.Context, k Key, delta, limit int64, ttl time.Duration) (int64, error) {
	if err := b.isClosed("add"); err != nil {
		return 0, err
	}
	ek := encKey(k)
	var val int64
	err := b.update("add", 0, func(tx *bolt.Tx) error {
		now := time.Now()
		ctrs := tx.Bucket(bCounters)
		raw := ctrs.Get(ek)
		var cur, exp int64
		if len(raw) == 16 {
			cur, exp = int64(unbe64(raw[:8])), int64(unbe64(raw[8:]))
			if exp != 0 && now.UnixNano() >= exp {
				cur = 0
			}
		}
		if delta > 0 && limit > 0 && cur+delta > limit {
			val = cur
			return fmt.Errorf("counter %s/%s at %d of %d: %w", k.Kind, k.ID, cur, limit, ErrLimit)
		}
		val = cur + delta
		if raw != nil {
			if err := dropExp(tx, expCounter, ek, exp); err != nil {
				return err
			}
		}
		if val <= 0 {
			return ctrs.Delete(ek)
		}
		if ttl > 0 {
			exp = now.Add(ttl).UnixNano()
		} else if exp != 0 && now.UnixNano() >= exp {
			exp = 0
		}
		if err := ctrs.Put(ek, append(be64(val), be64(exp)...)); err != nil {
			return err
		}
		return addExp(tx, expCounter, ek, exp)
	})
	return val, err
}

// Ping reports whether the store is open.
func (b *Bolt) Ping(context.Context) error {
	if err := b.isClosed("ping"); err != nil {
		return err
	}
	return b.view("ping", func(*bolt.Tx) error { return nil })
}

// Close refuses new calls (ErrUnavailable), stops the sweeper, wakes
// waiting Range calls (they return ErrUnavailable), commits the writes
// already queued, then closes the file, releasing its lock.
func (b *Bolt) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	close(b.done)
	b.wake.Broadcast()
	b.mu.Unlock()
	b.sweeper.Wait()
	b.committer.Wait()
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("state: close %s: %w", b.path, err)
	}
	return nil
}
