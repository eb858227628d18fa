package sessionrecords

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/state"
)

// kind is the state.Store kind of session records.
const kind = "session"

// storeTimeout bounds one state store operation, so a stalled backend
// cannot hold a request.
const storeTimeout = 2 * time.Second

// listMax bounds how many records of one owner List and Usage read.
const listMax = 1000

// Record is the API's record of a session: who owns it, when it was used
// and when it expires. The sandbox holds the session itself.
type Record struct {
	ID       string      `json:"id"`
	Owner    string      `json:"owner"`
	Created  time.Time   `json:"created"`
	LastUsed time.Time   `json:"last_used"`
	Limits   core.Limits `json:"limits"`
	// Background says whether processes the session's calls start may
	// outlive the calls.
	Background bool `json:"background"`
	// Environment is the environment the session was opened in ("": the
	// built-in python one); host-side tools of the session (fetch_url)
	// follow its egress list as the sandbox does.
	Environment string `json:"environment,omitempty"`
	// ExpiresAt is when the session expires unless it is used again; it is
	// computed, not stored.
	ExpiresAt time.Time `json:"-"`
}

// Store holds session records in the shared state store, keyed by owner,
// so any replica sharing the store answers for any session. A record
// expires on the same rules as the sandbox's session (idle TTL and maximum
// life), so every route answers 404 from the same moment on.
type Store struct {
	st      state.Store
	idle    time.Duration
	maxLife time.Duration // 0: no maximum
	now     func() time.Time
}

// New returns a store over st whose records expire idle for idle or
// maxLife after they were opened (0: no maximum); now is the clock.
func New(st state.Store, idle, maxLife time.Duration, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{st: st, idle: idle, maxLife: maxLife, now: now}
}

// key is the store key of owner's record id.
func key(owner, id string) state.Key { return state.Key{Kind: kind, Owner: owner, ID: id} }

// expiry is when r expires if it is not used again.
func (s *Store) expiry(r *Record) time.Time {
	t := r.LastUsed.Add(s.idle)
	if s.maxLife > 0 {
		if end := r.Created.Add(s.maxLife); end.Before(t) {
			t = end
		}
	}
	return t
}

// view is a copy of r with its expiry set.
func (s *Store) view(r *Record) Record {
	v := *r
	v.ExpiresAt = s.expiry(r)
	return v
}

// write stores r, conditioned on ifVersion (see state.PutOptions). The
// store's TTL is the record's remaining life plus a minute's slack; the
// clock decides expiry on read.
func (s *Store) write(ctx context.Context, r *Record, ifVersion int64) error {
	return s.put(ctx, r, state.PutOptions{IfVersion: ifVersion})
}

// touch stores r after a use: a lazy write (state.PutOptions.Lazy), so
// the embedded store does not sync the disk for it. A crash loses at most
// the store's flush interval of touches (1 s for the embedded store):
// those sessions' records then expire that much earlier than their use
// says, never later.
func (s *Store) touch(ctx context.Context, r *Record, ifVersion int64) error {
	return s.put(ctx, r, state.PutOptions{IfVersion: ifVersion, Lazy: true})
}

// put stores r with opt, its TTL set from r's remaining life.
func (s *Store) put(ctx context.Context, r *Record, opt state.PutOptions) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("session records: encode %s: %w", r.ID, err)
	}
	opt.TTL = max(s.expiry(r).Sub(s.now())+time.Minute, time.Minute)
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if _, err = s.st.Put(ctx, key(r.Owner, r.ID), b, opt); err != nil {
		return fmt.Errorf("session records: write %s: %w", r.ID, err)
	}
	return nil
}

// decode turns a stored item into a record.
func decode(it state.Item) (*Record, bool) {
	var r Record
	if json.Unmarshal(it.Value, &r) != nil {
		return nil, false
	}
	return &r, true
}

// Add records a new session of owner and returns its record.
func (s *Store) Add(ctx context.Context, owner, id string, limits core.Limits, background bool) (Record, error) {
	return s.AddIn(ctx, owner, id, "", limits, background)
}

// AddIn is Add for a session opened in environment env.
func (s *Store) AddIn(ctx context.Context, owner, id, env string, limits core.Limits, background bool) (Record, error) {
	now := s.now()
	r := &Record{ID: id, Owner: owner, Created: now, LastUsed: now, Limits: limits, Background: background, Environment: env}
	if err := s.write(ctx, r, -1); err != nil {
		return Record{}, err
	}
	return s.view(r), nil
}

// load reads owner's record id with its version; an expired one is
// deleted and not found.
func (s *Store) load(ctx context.Context, owner, id string) (*Record, int64, bool) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	it, err := s.st.Get(ctx, key(owner, id))
	if err != nil {
		return nil, 0, false
	}
	r, ok := decode(it)
	if !ok || r.Owner != owner {
		return nil, 0, false
	}
	if !s.now().Before(s.expiry(r)) {
		_ = s.st.Delete(ctx, it.Key, it.Version)
		return nil, 0, false
	}
	return r, it.Version, true
}

// Get returns owner's session id; another owner's session, an expired one
// and one the store cannot read are not found. touch marks it used, unless
// it was used within TouchSlack.
func (s *Store) Get(ctx context.Context, owner, id string, touch bool) (Record, bool) {
	r, ver, ok := s.load(ctx, owner, id)
	if !ok {
		return Record{}, false
	}
	if now := s.now(); touch && now.Sub(r.LastUsed) >= s.TouchSlack() {
		r.LastUsed = now
		_ = s.touch(ctx, r, ver) // a concurrent touch winning is as good
	}
	return s.view(r), true
}

// TouchSlack is how recent a use makes a touch on read unnecessary: a
// session used this recently (its last call ended then, see Touch) keeps
// all but TouchSlack of its idle time, so skipping the write saves a
// store round trip per call at an agent's pace and moves expiry by at most
// a twentieth of the idle TTL (never more than 30 s).
func (s *Store) TouchSlack() time.Duration {
	return min(s.idle/20, 30*time.Second)
}

// Touch marks owner's session id used now, as the sandbox does when a
// call ends.
func (s *Store) Touch(ctx context.Context, owner, id string) {
	if r, ver, ok := s.load(ctx, owner, id); ok {
		r.LastUsed = s.now()
		_ = s.touch(ctx, r, ver)
	}
}

// CheckBudget refuses (a *BudgetError) a new session of owner with
// limits l when it would pass one of owner's session budgets b, naming
// it; zero limits count as the sandbox defaults d give them.
func (s *Store) CheckBudget(ctx context.Context, owner string, l core.Limits, b keys.Budget, d core.Limits) error {
	eff := func(l core.Limits) core.Limits {
		l.Memory, l.CPUs = cmp.Or(l.Memory, d.Memory), cmp.Or(l.CPUs, d.CPUs)
		return l
	}
	var n int
	var mem int64
	var cpus float64
	now := s.now()
	for _, r := range s.records(ctx, owner) {
		if now.Sub(r.LastUsed) <= s.idle {
			rl := eff(r.Limits)
			n, mem, cpus = n+1, mem+rl.Memory, cpus+rl.CPUs
		}
	}
	l = eff(l)
	switch {
	case b.Sessions > 0 && n+1 > b.Sessions:
		return &BudgetError{Budget: "sessions", Limit: b.Sessions,
			msg: fmt.Sprintf("budget sessions: this key has %d open sessions, its maximum; close one first", n)}
	case b.SessionMemory > 0 && mem+l.Memory > b.SessionMemory:
		return &BudgetError{Budget: "session_memory_bytes", Limit: b.SessionMemory,
			msg: fmt.Sprintf("budget session_memory_bytes: this key's sessions would hold %d bytes of memory, over its %d", mem+l.Memory, b.SessionMemory)}
	case b.SessionCPUs > 0 && cpus+l.CPUs > b.SessionCPUs+1e-9:
		return &BudgetError{Budget: "session_cpus", Limit: b.SessionCPUs,
			msg: fmt.Sprintf("budget session_cpus: this key's sessions would hold %g CPUs, over its %g", cpus+l.CPUs, b.SessionCPUs)}
	}
	return nil
}

// BudgetError is a session refused by one of its owner's budgets. It
// carries core.ErrQuota.
type BudgetError struct {
	Budget string // sessions, session_memory_bytes or session_cpus
	Limit  any
	msg    string
}

// Error implements error.
func (e *BudgetError) Error() string { return e.msg }

// Unwrap makes errors.Is(err, core.ErrQuota) true.
func (e *BudgetError) Unwrap() error { return core.ErrQuota }

// ErrorDetails are the details of the API's error answer.
func (e *BudgetError) ErrorDetails() map[string]any {
	return map[string]any{"budget": e.Budget, "limit": e.Limit}
}

// Remove forgets owner's session id.
func (s *Store) Remove(ctx context.Context, owner, id string) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	_ = s.st.Delete(ctx, key(owner, id), 0)
}

// records returns owner's live records; expired ones are deleted.
func (s *Store) records(ctx context.Context, owner string) []*Record {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	items, err := s.st.List(ctx, kind, owner, "", listMax)
	if err != nil {
		return nil
	}
	now := s.now()
	var out []*Record
	for _, it := range items {
		r, ok := decode(it)
		switch {
		case !ok || r.Owner != owner:
		case !now.Before(s.expiry(r)):
			_ = s.st.Delete(ctx, it.Key, it.Version)
		default:
			out = append(out, r)
		}
	}
	return out
}

// List returns owner's live records.
func (s *Store) List(ctx context.Context, owner string) []Record {
	var out []Record
	for _, r := range s.records(ctx, owner) {
		out = append(out, s.view(r))
	}
	return out
}
