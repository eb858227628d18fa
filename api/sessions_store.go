package api

import (
	"context"
	"encoding/json"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// sessionKind is the state.Store kind of session records.
const sessionKind = "session"

// sessionStoreTimeout bounds one state store operation of the session
// records, so a stalled backend cannot hold a request.
const sessionStoreTimeout = 2 * time.Second

// sessionListMax bounds how many records of one owner list and usage read.
const sessionListMax = 1000

// sessionRecord is the API's record of a session: who owns it, when it was
// used and when it expires. The sandbox holds the session itself.
type sessionRecord struct {
	ID        string      `json:"id"`
	Owner     string      `json:"-"`
	Created   time.Time   `json:"created"`
	LastUsed  time.Time   `json:"last_used"`
	ExpiresAt time.Time   `json:"expires_at"`
	Limits    core.Limits `json:"-"`
	// Background says whether processes the session's calls start may
	// outlive the calls.
	Background bool `json:"background"`
}

// storedSession is a sessionRecord as kept in the state store (every
// field, including those the API does not show).
type storedSession struct {
	ID         string      `json:"id"`
	Owner      string      `json:"owner"`
	Created    time.Time   `json:"created"`
	LastUsed   time.Time   `json:"last_used"`
	Limits     core.Limits `json:"limits"`
	Background bool        `json:"background"`
}

// sessionStore holds session records for ownership checks and GET in the
// shared state store, keyed by owner, so any replica sharing the store
// answers for any session. A record expires on the same rules as the
// sandbox's session (idle TTL and maximum life), so every route answers
// 404 from the same moment on.
type sessionStore struct {
	st      state.Store
	idle    time.Duration
	maxLife time.Duration // 0: no maximum
	now     func() time.Time
}

// newSessionStore returns a store over st whose records expire idle for
// idle or maxLife after they were opened.
func newSessionStore(st state.Store, idle, maxLife time.Duration, now func() time.Time) *sessionStore {
	return &sessionStore{st: st, idle: idle, maxLife: maxLife, now: now}
}

// ctx returns the bounded context of one store operation.
func (s *sessionStore) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), sessionStoreTimeout)
}

// expiry is when r expires if it is not used again.
func (s *sessionStore) expiry(r *sessionRecord) time.Time {
	t := r.LastUsed.Add(s.idle)
	if s.maxLife > 0 {
		if end := r.Created.Add(s.maxLife); end.Before(t) {
			t = end
		}
	}
	return t
}

// view is a copy of r with its expiry set.
func (s *sessionStore) view(r *sessionRecord) sessionRecord {
	v := *r
	v.ExpiresAt = s.expiry(r)
	return v
}

// write stores r, conditioned on ifVersion (see state.PutOptions). The
// store's TTL is the record's remaining life plus a minute's slack; the
// API's own clock decides expiry on read.
func (s *sessionStore) write(r *sessionRecord, ifVersion int64) error {
	b, err := json.Marshal(storedSession{ID: r.ID, Owner: r.Owner, Created: r.Created, LastUsed: r.LastUsed,
		Limits: r.Limits, Background: r.Background})
	if err != nil {
		return err
	}
	ttl := s.expiry(r).Sub(s.now()) + time.Minute
	if ttl < time.Minute {
		ttl = time.Minute
	}
	ctx, cancel := s.ctx()
	defer cancel()
	_, err = s.st.Put(ctx, state.Key{Kind: sessionKind, Owner: r.Owner, ID: r.ID}, b, state.PutOptions{TTL: ttl, IfVersion: ifVersion})
	return err
}

// decode turns a stored item into a record.
func decodeSession(it state.Item) (*sessionRecord, bool) {
	var v storedSession
	if json.Unmarshal(it.Value, &v) != nil {
		return nil, false
	}
	return &sessionRecord{ID: v.ID, Owner: v.Owner, Created: v.Created, LastUsed: v.LastUsed,
		Limits: v.Limits, Background: v.Background}, true
}

// add records a new session of owner and returns a copy of the record.
func (s *sessionStore) add(owner, id string, limits core.Limits, background bool) (sessionRecord, error) {
	now := s.now()
	r := &sessionRecord{ID: id, Owner: owner, Created: now, LastUsed: now, Limits: limits, Background: background}
	if err := s.write(r, -1); err != nil {
		return sessionRecord{}, err
	}
	return s.view(r), nil
}

// load reads owner's record id with its version; an expired one is deleted
// and not found.
func (s *sessionStore) load(owner, id string) (*sessionRecord, int64, bool) {
	ctx, cancel := s.ctx()
	defer cancel()
	k := state.Key{Kind: sessionKind, Owner: owner, ID: id}
	it, err := s.st.Get(ctx, k)
	if err != nil {
		return nil, 0, false
	}
	r, ok := decodeSession(it)
	if !ok || r.Owner != owner {
		return nil, 0, false
	}
	if !s.now().Before(s.expiry(r)) {
		_ = s.st.Delete(ctx, k, it.Version)
		return nil, 0, false
	}
	return r, it.Version, true
}

// get returns owner's session id; another owner's session and an expired
// one are not found. touch marks it used.
func (s *sessionStore) get(owner, id string, touch bool) (sessionRecord, bool) {
	r, ver, ok := s.load(owner, id)
	if !ok {
		return sessionRecord{}, false
	}
	if now := s.now(); touch && now.Sub(r.LastUsed) >= s.touchSlack() {
		r.LastUsed = now
		_ = s.write(r, ver) // a concurrent touch winning is as good
	}
	return s.view(r), true
}

// touchSlack is how recent a use makes a touch on read unnecessary: a
// session used this recently (its last call ended then, see touch) keeps
// all but touchSlack of its idle time, so skipping the write saves a
// store round trip per call at an agent's pace and moves expiry by at most
// a twentieth of the idle TTL (never more than 30 s).
func (s *sessionStore) touchSlack() time.Duration {
	return min(s.idle/20, 30*time.Second)
}

// touch marks owner's session id used now, as the sandbox does when a call
// ends.
func (s *sessionStore) touch(owner, id string) {
	if r, ver, ok := s.load(owner, id); ok {
		r.LastUsed = s.now()
		_ = s.write(r, ver)
	}
}

// usage returns how many sessions owner holds and their memory and CPUs,
// each session's limits filled in by eff.
func (s *sessionStore) usage(owner string, eff func(core.Limits) core.Limits) (n int, mem int64, cpus float64) {
	now := s.now()
	for _, r := range s.records(owner) {
		if now.Sub(r.LastUsed) > s.idle {
			continue
		}
		l := eff(r.Limits)
		n, mem, cpus = n+1, mem+l.Memory, cpus+l.CPUs
	}
	return n, mem, cpus
}

// remove forgets owner's session id.
func (s *sessionStore) remove(owner, id string) {
	ctx, cancel := s.ctx()
	defer cancel()
	_ = s.st.Delete(ctx, state.Key{Kind: sessionKind, Owner: owner, ID: id}, 0)
}

// records returns owner's live records; expired ones are deleted.
func (s *sessionStore) records(owner string) []*sessionRecord {
	ctx, cancel := s.ctx()
	defer cancel()
	items, err := s.st.List(ctx, sessionKind, owner, "", sessionListMax)
	if err != nil {
		return nil
	}
	now := s.now()
	var out []*sessionRecord
	for _, it := range items {
		r, ok := decodeSession(it)
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

// list returns copies of owner's live records.
func (s *sessionStore) list(owner string) []sessionRecord {
	var out []sessionRecord
	for _, r := range s.records(owner) {
		out = append(out, s.view(r))
	}
	return out
}
