package api

import (
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
)

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

// sessionStore holds session records for ownership checks and GET. A
// record expires on the same rules as the sandbox's session (idle TTL and
// maximum life), so every route answers 404 from the same moment on.
type sessionStore struct {
	mu      sync.Mutex
	idle    time.Duration
	maxLife time.Duration // 0: no maximum
	now     func() time.Time
	m       map[string]*sessionRecord
}

// newSessionStore returns an empty store whose records expire idle for
// idle or maxLife after they were opened.
func newSessionStore(idle, maxLife time.Duration, now func() time.Time) *sessionStore {
	return &sessionStore{idle: idle, maxLife: maxLife, now: now, m: map[string]*sessionRecord{}}
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

// add records a new session of owner and returns a copy of the record;
// expired records are dropped on the way.
func (s *sessionStore) add(owner, id string, limits core.Limits, background bool) sessionRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, r := range s.m {
		if !now.Before(s.expiry(r)) {
			delete(s.m, k)
		}
	}
	r := &sessionRecord{ID: id, Owner: owner, Created: now, LastUsed: now, Limits: limits, Background: background}
	s.m[id] = r
	return s.view(r)
}

// get returns owner's session id; another owner's session and an expired
// one are not found. touch marks it used.
func (s *sessionStore) get(owner, id string, touch bool) (sessionRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[id]
	if !ok || r.Owner != owner {
		return sessionRecord{}, false
	}
	now := s.now()
	if !now.Before(s.expiry(r)) {
		delete(s.m, id)
		return sessionRecord{}, false
	}
	if touch {
		r.LastUsed = now
	}
	return s.view(r), true
}

// touch marks session id used now, as the sandbox does when a call ends.
func (s *sessionStore) touch(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.m[id]; ok {
		if now := s.now(); now.Before(s.expiry(r)) {
			r.LastUsed = now
		}
	}
}

// usage returns how many sessions owner holds and their memory and CPUs,
// each session's limits filled in by eff.
func (s *sessionStore) usage(owner string, eff func(core.Limits) core.Limits) (n int, mem int64, cpus float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, r := range s.m {
		if r.Owner != owner || now.Sub(r.LastUsed) > s.idle {
			continue
		}
		l := eff(r.Limits)
		n, mem, cpus = n+1, mem+l.Memory, cpus+l.CPUs
	}
	return n, mem, cpus
}

// remove forgets session id.
func (s *sessionStore) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// list returns copies of owner's live records.
func (s *sessionStore) list(owner string) []sessionRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var out []sessionRecord
	for id, r := range s.m {
		switch {
		case !now.Before(s.expiry(r)):
			delete(s.m, id)
		case r.Owner == owner:
			out = append(out, s.view(r))
		}
	}
	return out
}
