package api

import (
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// artifactStore keeps artifact bytes in memory for a while so that JSON
// answers can carry download URLs instead of bytes. It is bounded by a TTL
// and a total size; the oldest artifacts go first.
type artifactStore struct {
	mu    sync.Mutex
	ttl   time.Duration
	max   int64
	now   func() time.Time
	total int64
	items map[string]*storedArtifact
	order []string // ids, oldest first (all share one TTL, so also by expiry)
}

// storedArtifact is one artifact and who may read it.
type storedArtifact struct {
	id, owner, session string
	core.Artifact
	expires time.Time
}

// newArtifactStore returns an empty store.
func newArtifactStore(ttl time.Duration, max int64, now func() time.Time) *artifactStore {
	return &artifactStore{ttl: ttl, max: max, now: now, items: map[string]*storedArtifact{}}
}

// put stores a copy-free reference to a's bytes for owner (and session, ""
// for one-shot calls) and returns its id; ok is false when a alone is over
// the store's cap or carries no bytes.
func (s *artifactStore) put(owner, session string, a core.Artifact) (id string, ok bool) {
	size := int64(len(a.Data))
	if size == 0 || size > s.max {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.expire(now)
	if a.SHA256 != "" {
		for _, old := range s.items {
			if old.owner == owner && old.session == session && old.SHA256 == a.SHA256 && old.Name == a.Name {
				return old.id, true // the same bytes again (e.g. an event replayed on resume)
			}
		}
	}
	for s.total+size > s.max && len(s.order) > 0 {
		s.evictOldest()
	}
	id = newID("art_")
	s.items[id] = &storedArtifact{id: id, owner: owner, session: session, Artifact: a, expires: now.Add(s.ttl)}
	s.order = append(s.order, id)
	s.total += size
	return id, true
}

// get returns owner's artifact id made in session ("" for one-shot calls).
// Another owner's artifact, or one from another session, is not found.
func (s *artifactStore) get(owner, session, id string) (*storedArtifact, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(s.now())
	a, ok := s.items[id]
	if !ok || a.owner != owner || a.session != session {
		return nil, false
	}
	return a, true
}

// expire drops artifacts past their TTL. Callers hold mu.
func (s *artifactStore) expire(now time.Time) {
	for len(s.order) > 0 {
		a := s.items[s.order[0]]
		if a != nil && now.Before(a.expires) {
			return
		}
		s.evictOldest()
	}
}

// evictOldest drops the oldest artifact. Callers hold mu.
func (s *artifactStore) evictOldest() {
	id := s.order[0]
	s.order[0] = ""
	s.order = s.order[1:]
	if a, ok := s.items[id]; ok {
		s.total -= int64(len(a.Data))
		delete(s.items, id)
	}
	if len(s.order) == 0 {
		s.order = nil // let the backing array go
	}
}
