package artifacts

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/state"
)

// quotaKind is the state.Store kind of the artifact quota counters.
const quotaKind = "artquota"

// quotaWindows is how many time windows one artifact TTL spans. An
// artifact holds its share of the quota from when it is made until the end
// of its window's life: its TTL plus at most one window (TTL/quotaWindows)
// longer than the artifact itself.
const quotaWindows = 6

// quotaSkew is how long after a window ends another replica, its clock
// behind this one's, may still add to it; until then this replica reads
// that window live instead of caching it.
const quotaSkew = 10 * time.Second

// quotaCacheMax bounds the per-owner cache of finished windows' sums.
const quotaCacheMax = 4096

// quota counts each owner's stored artifact bytes and count in the
// shared state store, so every replica using the store enforces one quota
// per owner (an API key's artifacts made through replica A count when the
// next one is made through replica B).
//
// Artifacts leave only by their TTL, silently (Redis expires the record;
// nobody is told), so one counter per owner would count expired artifacts
// forever. Instead time is cut into windows of TTL/quotaWindows: an
// artifact is counted in the two counters (bytes, count) of the window it
// was made in, and those counters expire, by the store's own TTL, when the
// last artifact they count has expired, at the end of the window plus the
// artifact TTL. An owner's usage is the sum of the live windows
// (quotaWindows+1 of them); nothing has to decrement anything, a replica
// that dies leaks nothing, and usage is never below the truth (it is above
// it by the artifacts that expired less than one window ago). Only the
// current window is ever added to; the finished ones are summed once per
// window and owner and cached (after quotaSkew, so a replica whose clock
// is a little behind has finished adding). A new artifact is admitted by
// one bounded Add per counter whose limit is the quota minus the finished
// windows' sum, so two replicas racing cannot both pass the quota.
type quota struct {
	st     state.Store
	window time.Duration
	now    func() time.Time

	mu   sync.Mutex
	past map[string]pastUsage // owner → finished windows' sum for window idx
}

// pastUsage is the sum of an owner's finished live windows as seen while
// window idx is the current one, and the current window's counters as
// last seen (they only grow during the window, so a refusal by them holds
// without asking the store again).
type pastUsage struct {
	idx          int64
	bytes, count int64
	curBytes     int64
	curCount     int64
}

// newQuota returns the quota counters for artifacts kept ttl.
func newQuota(st state.Store, ttl time.Duration, now func() time.Time) *quota {
	w := (ttl + quotaWindows - 1) / quotaWindows
	if w < time.Second {
		w = time.Second
	}
	return &quota{st: st, window: w, now: now, past: map[string]pastUsage{}}
}

// errQuotaFull says which of an owner's quotas a new artifact would pass.
type errQuotaFull struct{ what string }

// Error implements error.
func (e errQuotaFull) Error() string { return "artifact " + e.what + " quota reached" }

// index is the window holding t.
func (q *quota) index(t time.Time) int64 { return t.UnixNano() / int64(q.window) }

// keys are the bytes and count counters of owner's window idx.
func (q *quota) keys(owner string, idx int64) (state.Key, state.Key) {
	return state.Key{Kind: quotaKind, Owner: owner, ID: fmt.Sprintf("b:%d", idx)},
		state.Key{Kind: quotaKind, Owner: owner, ID: fmt.Sprintf("n:%d", idx)}
}

// ttl is how long window idx's counters must live from now: until the
// last artifact made in it has expired.
func (q *quota) ttl(idx int64, now time.Time) time.Duration {
	end := time.Unix(0, (idx+quotaWindows+1)*int64(q.window))
	return end.Sub(now) + time.Second
}

// read returns a counter's value without changing it.
func (q *quota) read(ctx context.Context, k state.Key) (int64, error) {
	v, err := q.st.Add(ctx, k, 0, 0, 0)
	if err != nil {
		return 0, fmt.Errorf("artifact quota: read %s: %w", k.ID, err)
	}
	return max(v, 0), nil
}

// sum adds owner's windows from idx-quotaWindows to last.
func (q *quota) sum(ctx context.Context, owner string, idx, last int64) (bytes, count int64, err error) {
	for j := idx - quotaWindows; j <= last; j++ {
		kb, kn := q.keys(owner, j)
		b, err := q.read(ctx, kb)
		if err != nil {
			return 0, 0, err
		}
		n, err := q.read(ctx, kn)
		if err != nil {
			return 0, 0, err
		}
		bytes, count = bytes+b, count+n
	}
	return bytes, count, nil
}

// finished returns the sum of owner's live windows before the current
// window idx, cached once no replica can still be adding to them.
func (q *quota) finished(ctx context.Context, owner string, idx int64, now time.Time) (int64, int64, error) {
	q.mu.Lock()
	p, ok := q.past[owner]
	q.mu.Unlock()
	if ok && p.idx == idx {
		return p.bytes, p.count, nil
	}
	b, n, err := q.sum(ctx, owner, idx, idx-1)
	if err != nil {
		return 0, 0, err
	}
	if now.Sub(time.Unix(0, idx*int64(q.window))) >= min(quotaSkew, q.window/10) {
		q.mu.Lock()
		if len(q.past) >= quotaCacheMax {
			clear(q.past)
		}
		q.past[owner] = pastUsage{idx: idx, bytes: b, count: n}
		q.mu.Unlock()
	}
	return b, n, nil
}

// reserve counts an artifact of size bytes for owner if it fits under
// maxBytes and maxCount and returns the window it was counted in (for
// release). A full quota is an errQuotaFull; a store failure is returned
// wrapped and nothing is counted.
func (q *quota) reserve(ctx context.Context, owner string, size, maxBytes int64, maxCount int) (int64, error) {
	now := q.now()
	idx := q.index(now)
	pb, pn, err := q.finished(ctx, owner, idx, now)
	if err != nil {
		return 0, err
	}
	cb, cn := q.seen(owner, idx)
	roomBytes, roomCount := maxBytes-pb, int64(maxCount)-pn
	if roomBytes-cb < size {
		return 0, errQuotaFull{"bytes"}
	}
	if roomCount-cn < 1 {
		return 0, errQuotaFull{"count"}
	}
	kb, kn := q.keys(owner, idx)
	ttl := q.ttl(idx, now)
	vb, err := q.st.Add(ctx, kb, size, roomBytes, ttl)
	if err != nil {
		if errors.Is(err, state.ErrLimit) {
			q.saw(owner, idx, vb, -1)
			return 0, errQuotaFull{"bytes"}
		}
		return 0, fmt.Errorf("artifact quota: count bytes: %w", err)
	}
	vn, err := q.st.Add(ctx, kn, 1, roomCount, ttl)
	if err != nil {
		q.undo(ctx, kb, -size)
		if errors.Is(err, state.ErrLimit) {
			q.saw(owner, idx, -1, vn)
			return 0, errQuotaFull{"count"}
		}
		return 0, fmt.Errorf("artifact quota: count artifacts: %w", err)
	}
	q.saw(owner, idx, vb-size, vn-1) // others' share, without this reservation
	return idx, nil
}

// seen returns the current window's counters as last seen (0 when not).
func (q *quota) seen(owner string, idx int64) (int64, int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if p, ok := q.past[owner]; ok && p.idx == idx {
		return p.curBytes, p.curCount
	}
	return 0, 0
}

// saw records the current window's counters as read (-1: not read), when
// the finished windows of idx are cached.
func (q *quota) saw(owner string, idx, bytes, count int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	p, ok := q.past[owner]
	if !ok || p.idx != idx {
		return
	}
	p.curBytes, p.curCount = max(p.curBytes, bytes), max(p.curCount, count)
	q.past[owner] = p
}

// release takes back a reservation of window idx that was not used.
func (q *quota) release(ctx context.Context, owner string, idx, size int64) {
	kb, kn := q.keys(owner, idx)
	q.undo(ctx, kb, -size)
	q.undo(ctx, kn, -1)
}

// undo applies a negative delta, keeping the counter's expiry (a failure
// leaves the counter high, which only its expiry repairs: conservative).
func (q *quota) undo(ctx context.Context, k state.Key, delta int64) {
	_, _ = q.st.Add(ctx, k, delta, 0, 0)
}

// usage returns owner's counted artifact bytes and count, read live.
func (q *quota) usage(ctx context.Context, owner string) (int64, int64, error) {
	idx := q.index(q.now())
	return q.sum(ctx, owner, idx, idx)
}
