package state

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Memory is an in-process Store for unit tests of the packages built on
// the store. It passes the contract suite, but keeps nothing across a
// restart: deployments use Bolt or Redis.
type Memory struct {
	mu       sync.Mutex
	now      func() time.Time
	records  map[Key]*Item
	logs     map[Key]*memLog
	counters map[Key]*memCounter
	changed  chan struct{} // closed and replaced on every append
	closed   bool
}

type memLog struct {
	entries []Entry
	next    int64
	expires time.Time
}

type memCounter struct {
	value   int64
	expires time.Time
}

// NewMemory returns an empty in-memory store; now is the clock (nil means
// time.Now).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, records: map[Key]*Item{}, logs: map[Key]*memLog{},
		counters: map[Key]*memCounter{}, changed: make(chan struct{})}
}

func expired(exp, now time.Time) bool { return !exp.IsZero() && !now.Before(exp) }

func expiry(now time.Time, ttl time.Duration) time.Time {
	if ttl <= 0 {
		return time.Time{}
	}
	return now.Add(ttl)
}

func (m *Memory) live(k Key) (*Item, bool) {
	it, ok := m.records[k]
	if ok && expired(it.Expires, m.now()) {
		delete(m.records, k)
		return nil, false
	}
	return it, ok
}

func (m *Memory) check() error {
	if m.closed {
		return fmt.Errorf("memory store closed: %w", ErrUnavailable)
	}
	return nil
}

// Put writes a record.
func (m *Memory) Put(_ context.Context, k Key, value []byte, opt PutOptions) (int64, error) {
	if err := checkSize("put", k, len(value)); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return 0, err
	}
	old, ok := m.live(k)
	switch {
	case opt.IfVersion == -1 && ok:
		return 0, fmt.Errorf("create %s/%s: %w", k.Kind, k.ID, ErrConflict)
	case opt.IfVersion > 0 && (!ok || old.Version != opt.IfVersion):
		return 0, fmt.Errorf("update %s/%s: %w", k.Kind, k.ID, ErrConflict)
	}
	v := int64(1)
	if ok {
		v = old.Version + 1
	}
	m.records[k] = &Item{Key: k, Value: append([]byte(nil), value...), Version: v, Expires: expiry(m.now(), opt.TTL)}
	return v, nil
}

// Get reads a record.
func (m *Memory) Get(_ context.Context, k Key) (Item, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return Item{}, err
	}
	it, ok := m.live(k)
	if !ok {
		return Item{}, fmt.Errorf("get %s/%s: %w", k.Kind, k.ID, ErrNotFound)
	}
	c := *it
	c.Value = append([]byte(nil), it.Value...)
	return c, nil
}

// Delete removes a record.
func (m *Memory) Delete(_ context.Context, k Key, ifVersion int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return err
	}
	it, ok := m.live(k)
	if ifVersion > 0 && (!ok || it.Version != ifVersion) {
		return fmt.Errorf("delete %s/%s: %w", k.Kind, k.ID, ErrConflict)
	}
	delete(m.records, k)
	return nil
}

// List returns live records of kind and owner ordered by id.
func (m *Memory) List(_ context.Context, kind, owner, after string, limit int) ([]Item, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return nil, err
	}
	var out []Item
	for k := range m.records {
		if k.Kind != kind || k.Owner != owner || (after != "" && k.ID <= after) {
			continue
		}
		if it, ok := m.live(k); ok {
			c := *it
			c.Value = append([]byte(nil), it.Value...)
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key.ID < out[j].Key.ID })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Append adds an entry to a log.
func (m *Memory) Append(_ context.Context, k Key, data []byte, maxLen int, ttl time.Duration) (int64, error) {
	if err := checkSize("append", k, len(data)); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return 0, err
	}
	l := m.logs[k]
	if l == nil || expired(l.expires, m.now()) {
		l = &memLog{}
		m.logs[k] = l
	}
	l.next++
	l.entries = append(l.entries, Entry{Seq: l.next, Data: append([]byte(nil), data...)})
	if maxLen <= 0 {
		maxLen = DefaultMaxLogLen
	}
	if over := len(l.entries) - maxLen; over > 0 {
		l.entries = append([]Entry(nil), l.entries[over:]...)
	}
	l.expires = expiry(m.now(), ttl)
	close(m.changed)
	m.changed = make(chan struct{})
	return l.next, nil
}

// Range reads entries after a sequence number, waiting up to wait.
func (m *Memory) Range(ctx context.Context, k Key, after int64, limit int, wait time.Duration) ([]Entry, error) {
	deadline := time.Now().Add(wait)
	for {
		m.mu.Lock()
		if err := m.check(); err != nil {
			m.mu.Unlock()
			return nil, err
		}
		var out []Entry
		if l := m.logs[k]; l != nil && !expired(l.expires, m.now()) {
			for _, e := range l.entries {
				if e.Seq > after {
					out = append(out, Entry{Seq: e.Seq, Data: append([]byte(nil), e.Data...)})
					if limit > 0 && len(out) == limit {
						break
					}
				}
			}
		}
		changed := m.changed
		m.mu.Unlock()
		left := time.Until(deadline)
		if len(out) > 0 || wait <= 0 || left <= 0 {
			return out, nil
		}
		t := time.NewTimer(left)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// DeleteLog removes a log.
func (m *Memory) DeleteLog(_ context.Context, k Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return err
	}
	delete(m.logs, k)
	return nil
}

// Add changes a counter within a limit.
func (m *Memory) Add(_ context.Context, k Key, delta, limit int64, ttl time.Duration) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return 0, err
	}
	c := m.counters[k]
	if c == nil || expired(c.expires, m.now()) {
		c = &memCounter{}
	}
	if delta > 0 && limit > 0 && c.value+delta > limit {
		return c.value, fmt.Errorf("counter %s/%s at %d of %d: %w", k.Kind, k.ID, c.value, limit, ErrLimit)
	}
	c.value += delta
	if c.value <= 0 {
		delete(m.counters, k)
		return c.value, nil
	}
	if ttl > 0 {
		c.expires = m.now().Add(ttl)
	}
	m.counters[k] = c
	return c.value, nil
}

// Ping reports whether the store is open.
func (m *Memory) Ping(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.check()
}

// Close marks the store closed.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
