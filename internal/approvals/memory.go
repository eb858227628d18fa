package approvals

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// Memory is an in-process Store, safe for concurrent use.
type Memory struct {
	mu   sync.Mutex
	now  func() time.Time
	seq  uint64
	recs map[memKey]memRec
}

// memKey identifies a record.
type memKey struct{ run, token string }

// memRec is a stored record with its insertion number.
type memRec struct {
	Record
	seq uint64
}

// NewMemory returns an empty store; now is the clock that expiry is
// checked against (nil means time.Now).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, recs: map[memKey]memRec{}}
}

// expired reports whether r is past its expiry at now.
func expired(r Record, now time.Time) bool { return !r.Expires.IsZero() && now.After(r.Expires) }

// Put stores r and drops expired records.
func (m *Memory) Put(_ context.Context, r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for k, v := range m.recs {
		if expired(v.Record, now) {
			delete(m.recs, k)
		}
	}
	m.seq++
	r.Value = slices.Clone(r.Value)
	m.recs[memKey{r.Run, r.Token}] = memRec{Record: r, seq: m.seq}
	return nil
}

// Take removes and returns the record of (run, token).
func (m *Memory) Take(_ context.Context, run, token string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{run, token}
	r, ok := m.recs[k]
	if !ok {
		return Record{}, ErrNotFound
	}
	delete(m.recs, k)
	if expired(r.Record, m.now()) {
		return Record{}, ErrNotFound
	}
	return r.Record, nil
}

// List returns the live records of run, oldest first.
func (m *Memory) List(_ context.Context, run string) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if run == "" {
		return nil, nil
	}
	now := m.now()
	var live []memRec
	for _, v := range m.recs {
		if v.Run == run && !expired(v.Record, now) {
			live = append(live, v)
		}
	}
	slices.SortFunc(live, func(a, b memRec) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]Record, len(live))
	for i, v := range live {
		out[i] = v.Record
		out[i].Value = slices.Clone(v.Value)
	}
	return out, nil
}

// DeleteRun forgets every record of run; an empty run is a no-op.
func (m *Memory) DeleteRun(_ context.Context, run string) error {
	if run == "" {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.recs {
		if k.run == run {
			delete(m.recs, k)
		}
	}
	return nil
}

// Len returns the number of stored records, expired ones included.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.recs)
}
