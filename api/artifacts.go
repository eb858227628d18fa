package api

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// artifactLimits bound the artifact store.
type artifactLimits struct {
	ttl        time.Duration
	maxBytes   int64 // this replica's copies, all owners together; past it new ones are refused
	ownerBytes int64 // one owner, on every replica; past it new ones are refused
	ownerCount int   // one owner's artifacts, on every replica; likewise
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

// artifactStore keeps artifact bytes for a while so that JSON answers can
// carry download URLs instead of bytes. Every artifact is written to the
// shared state store (with the artifact TTL), so every replica using it,
// and this one after a restart, serves it; this replica also keeps the
// bytes of the artifacts it made in memory (a map by id, a hash index for
// de-duplication and a list in age order for the shared TTL), bounded by
// maxBytes for all owners together: a full replica refuses new artifacts
// instead of dropping another owner's. Each owner's byte and count quota is
// counted in the state store (artifactQuota), so it holds across replicas:
// past it, a new artifact is not kept (no URL; an error and a warning say
// why) until older ones expire.
type artifactStore struct {
	mu     sync.Mutex
	lim    artifactLimits
	now    func() time.Time
	total  int64 // bytes held in memory, including puts under way
	items  map[string]*storedArtifact
	dedupe map[dedupeKey]*storedArtifact
	byAge  *list.List // *storedArtifact, oldest first; all share one TTL
	st     state.Store
	quota  *artifactQuota
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
	dedupKey dedupeKey
}

// newArtifactStore returns an empty store over the shared state store st.
func newArtifactStore(lim artifactLimits, st state.Store, now func() time.Time) *artifactStore {
	return &artifactStore{lim: lim, now: now, items: map[string]*storedArtifact{},
		dedupe: map[dedupeKey]*storedArtifact{}, byAge: list.New(), st: st,
		quota: newArtifactQuota(st, lim.ttl, now)}
}

// put stores a's bytes (already validated, see checkArtifacts) for owner
// and session ("" for one-shot calls) and returns its id, or "" and why it
// was not kept (code quota when the owner's quota is full, too_large for
// an artifact over it alone, busy when this replica is full, unavailable
// when the state store cannot count it).
func (s *artifactStore) put(owner, session string, a core.Artifact) (string, *Error) {
	size := int64(len(a.Data))
	ownerBytes, ownerCount := s.lim.quota(owner)
	switch {
	case size == 0:
		return "", newError(core.ErrInvalid, fmt.Sprintf("artifact %s has no bytes; not kept", a.Name))
	case size > ownerBytes || size > s.lim.maxBytes:
		return "", newError(core.ErrTooLarge, fmt.Sprintf("artifact %s (%d bytes) is over the per-key artifact budget of %d bytes; not kept", a.Name, size, min(ownerBytes, s.lim.maxBytes)))
	}
	key := dedupeKey{owner, session, a.SHA256, a.Name}
	s.mu.Lock()
	s.expire(s.now())
	if old, ok := s.dedupe[key]; ok && a.SHA256 != "" {
		s.mu.Unlock()
		return old.id, nil
	}
	if s.total+size > s.lim.maxBytes {
		s.mu.Unlock()
		return "", newError(core.ErrBusy, fmt.Sprintf("the server's artifact store is full (%d bytes held for all keys); artifact %s not kept, retry later", s.lim.maxBytes, a.Name))
	}
	s.total += size // held while the shared quota is asked
	s.mu.Unlock()

	id, kept, e := s.share(owner, session, a, ownerBytes, ownerCount)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total -= size
	if e != nil || !kept {
		return id, e
	}
	if _, ok := s.items[id]; ok { // the same artifact, put concurrently
		return id, nil
	}
	now := s.now()
	st := &storedArtifact{id: id, owner: owner, session: session, Artifact: a, expires: now.Add(s.lim.ttl), dedupKey: key}
	st.ageElem = s.byAge.PushBack(st)
	s.items[id] = st
	if a.SHA256 != "" {
		s.dedupe[key] = st
	}
	s.total += size
	return id, nil
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

// usage returns owner's artifact bytes and count as the shared quota
// counts them (every replica's; expired ones leave within a window).
func (s *artifactStore) usage(owner string) (int64, int) {
	ctx, cancel := context.WithTimeout(context.Background(), artifactStoreTimeout)
	defer cancel()
	b, n, _ := s.quota.usage(ctx, owner)
	return b, int(n)
}

// expire drops this replica's copies of artifacts past their TTL (the
// state store expires its own). Callers hold mu.
func (s *artifactStore) expire(now time.Time) {
	for e := s.byAge.Front(); e != nil; e = s.byAge.Front() {
		a := e.Value.(*storedArtifact)
		if now.Before(a.expires) {
			return
		}
		s.byAge.Remove(a.ageElem)
		delete(s.items, a.id)
		if s.dedupe[a.dedupKey] == a {
			delete(s.dedupe, a.dedupKey)
		}
		s.total -= int64(len(a.Data))
	}
}
