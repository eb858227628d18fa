package api

import (
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// sessionRecord is the API's record of a session: who owns it and when it
// was used. The sandbox holds the session itself.
type sessionRecord struct {
	ID       string      `json:"id"`
	Owner    string      `json:"-"`
	Created  time.Time   `json:"created"`
	LastUsed time.Time   `json:"last_used"`
	Limits   core.Limits `json:"-"`
	// Background says whether processes the session's calls start may
	// outlive the calls.
	Background bool `json:"background"`
}

// sessionStore holds session records for ownership checks and GET.
type sessionStore struct {
	mu   sync.Mutex
	idle time.Duration
	now  func() time.Time
	m    map[string]*sessionRecord
}

// newSessionStore returns an empty store dropping records idle for idle.
func newSessionStore(idle time.Duration, now func() time.Time) *sessionStore {
	return &sessionStore{idle: idle, now: now, m: map[string]*sessionRecord{}}
}

// add records a new session of owner and returns a copy of the record.
func (s *sessionStore) add(owner, id string, limits core.Limits, background bool) sessionRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, r := range s.m {
		if now.Sub(r.LastUsed) > s.idle {
			delete(s.m, k)
		}
	}
	r := &sessionRecord{ID: id, Owner: owner, Created: now, LastUsed: now, Limits: limits, Background: background}
	s.m[id] = r
	return *r
}

// get returns owner's session id; another owner's session is not found.
// touch marks it used.
func (s *sessionStore) get(owner, id string, touch bool) (sessionRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[id]
	if !ok || r.Owner != owner {
		return sessionRecord{}, false
	}
	now := s.now()
	if now.Sub(r.LastUsed) > s.idle {
		delete(s.m, id)
		return sessionRecord{}, false
	}
	if touch {
		r.LastUsed = now
	}
	return *r, true
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
