package api

import (
	"container/list"
	"fmt"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// artifactLimits bound the artifact store.
type artifactLimits struct {
	ttl        time.Duration
	maxBytes   int64 // all owners together; a new artifact past it is refused
	ownerBytes int64 // one owner; past it that owner's oldest go first
	ownerCount int   // one owner's artifacts; past it that owner's oldest go first
	// ownerQuota, when set, returns an owner's own byte and count quotas
	// (from its key's policy); zero values mean ownerBytes and ownerCount.
	ownerQuota func(owner string) (int64, int)
}

// quota returns owner's byte and count quotas.
func (l artifactLimits) quota(owner string) (int64, int) {
	b, n := l.ownerBytes, l.ownerCount
	if l.ownerQuota != nil {
		if ob, on := l.ownerQuota(owner); ob > 0 || on > 0 {
			if ob > 0 {
				b = ob
			}
			if on > 0 {
				n = on
			}
		}
	}
	return b, n
}

// artifactStore keeps artifact bytes in memory for a while so that JSON
// answers can carry download URLs instead of bytes. Every operation is
// O(1) (amortized): a map by id, a hash index for de-duplication and
// linked lists in age order, overall (for the shared TTL) and per owner
// (for eviction). An owner over its byte or count quota loses its own
// oldest artifacts; a full store refuses new artifacts instead of evicting
// another owner's.
type artifactStore struct {
	mu     sync.Mutex
	lim    artifactLimits
	now    func() time.Time
	total  int64
	items  map[string]*storedArtifact
	dedupe map[dedupeKey]*storedArtifact
	byAge  *list.List // *storedArtifact, oldest first; all share one TTL
	owners map[string]*ownerArtifacts
	// st, when set, shares every artifact kept here with the replicas
	// using the same state store and keeps it over a restart; quotas and
	// eviction are this replica's.
	st state.Store
}

// ownerArtifacts is one owner's share of the store.
type ownerArtifacts struct {
	bytes int64
	byAge *list.List // *storedArtifact, oldest first
}

// dedupeKey identifies the same bytes stored again by the same owner and
// session under the same name (e.g. an event replayed on resume).
type dedupeKey struct{ owner, session, sha, name string }

// storedArtifact is one artifact and who may read it.
type storedArtifact struct {
	id, owner, session string
	core.Artifact
	expires  time.Time
	ageElem  *list.Element
	ownElem  *list.Element
	dedupKey dedupeKey
}

// newArtifactStore returns an empty store.
func newArtifactStore(lim artifactLimits, now func() time.Time) *artifactStore {
	return &artifactStore{lim: lim, now: now, items: map[string]*storedArtifact{},
		dedupe: map[dedupeKey]*storedArtifact{}, byAge: list.New(), owners: map[string]*ownerArtifacts{}}
}

// put stores a reference to a's bytes (already validated, see
// checkArtifacts) for owner and session ("" for one-shot calls) and returns
// its id, or "" and the reason it was not kept.
func (s *artifactStore) put(owner, session string, a core.Artifact) (id, warning string) {
	size := int64(len(a.Data))
	ownerBytes, ownerCount := s.lim.quota(owner)
	switch {
	case size == 0:
		return "", fmt.Sprintf("artifact %s has no bytes; not kept", a.Name)
	case size > ownerBytes || size > s.lim.maxBytes:
		return "", fmt.Sprintf("artifact %s (%d bytes) is over the per-key artifact budget of %d bytes; not kept", a.Name, size, min(ownerBytes, s.lim.maxBytes))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.expire(now)
	key := dedupeKey{owner, session, a.SHA256, a.Name}
	if old, ok := s.dedupe[key]; ok && a.SHA256 != "" {
		return old.id, ""
	}
	own := s.owners[owner]
	if own == nil {
		own = &ownerArtifacts{byAge: list.New()}
		s.owners[owner] = own
	}
	if s.total-own.bytes+size > s.lim.maxBytes { // would not fit even without the owner's own
		if own.byAge.Len() == 0 {
			delete(s.owners, owner)
		}
		return "", fmt.Sprintf("the server's artifact store is full (%d bytes held for all keys); artifact %s not kept, retry later", s.lim.maxBytes, a.Name)
	}
	for own.byAge.Len() > 0 && (own.bytes+size > ownerBytes || own.byAge.Len() >= ownerCount ||
		s.total+size > s.lim.maxBytes) {
		s.remove(own.byAge.Front().Value.(*storedArtifact))
	}
	s.owners[owner] = own // remove drops an owner whose last artifact went
	id = newID("art_")
	st := &storedArtifact{id: id, owner: owner, session: session, Artifact: a, expires: now.Add(s.lim.ttl), dedupKey: key}
	st.ageElem = s.byAge.PushBack(st)
	st.ownElem = own.byAge.PushBack(st)
	s.items[id] = st
	if a.SHA256 != "" {
		s.dedupe[key] = st
	}
	s.total += size
	own.bytes += size
	s.persist(st)
	return id, ""
}

// get returns owner's artifact id made in session ("" for one-shot calls).
// Another owner's artifact, or one from another session, is not found.
func (s *artifactStore) get(owner, session, id string) (*storedArtifact, bool) {
	s.mu.Lock()
	s.expire(s.now())
	a, ok := s.items[id]
	s.mu.Unlock()
	if !ok {
		return s.fetch(owner, session, id) // made on another replica, or before a restart
	}
	if a.owner != owner || a.session != session {
		return nil, false
	}
	return a, true
}

// usage returns owner's stored bytes and count.
func (s *artifactStore) usage(owner string) (int64, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if own := s.owners[owner]; own != nil {
		return own.bytes, own.byAge.Len()
	}
	return 0, 0
}

// expire drops artifacts past their TTL. Callers hold mu.
func (s *artifactStore) expire(now time.Time) {
	for e := s.byAge.Front(); e != nil; e = s.byAge.Front() {
		a := e.Value.(*storedArtifact)
		if now.Before(a.expires) {
			return
		}
		s.remove(a)
	}
}

// remove drops a from every index. Callers hold mu.
func (s *artifactStore) remove(a *storedArtifact) {
	size := int64(len(a.Data))
	s.byAge.Remove(a.ageElem)
	delete(s.items, a.id)
	if s.dedupe[a.dedupKey] == a {
		delete(s.dedupe, a.dedupKey)
	}
	s.total -= size
	s.unpersist(a)
	if own := s.owners[a.owner]; own != nil {
		own.byAge.Remove(a.ownElem)
		own.bytes -= size
		if own.byAge.Len() == 0 {
			delete(s.owners, a.owner)
		}
	}
}
