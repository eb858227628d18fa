package api

import (
	"context"
	"encoding/json"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// artifactKind is the state.Store kind of artifacts.
const artifactKind = "artifact"

// artifactStoreTimeout bounds one state store operation on artifacts.
const artifactStoreTimeout = 2 * time.Second

// sharedArtifact is an artifact as kept in the state store.
type sharedArtifact struct {
	Session string `json:"session"`
	Name    string `json:"name"`
	MIME    string `json:"mime"`
	SHA256  string `json:"sha256"`
	Data    []byte `json:"data"`
}

// persist writes a to the shared store (when there is one) with the
// artifact TTL, so every replica, and this one after a restart, can serve
// it. A failed write keeps the artifact on this replica only.
func (s *artifactStore) persist(a *storedArtifact) {
	if s.st == nil {
		return
	}
	b, err := json.Marshal(sharedArtifact{Session: a.session, Name: a.Name, MIME: a.MIME, SHA256: a.SHA256, Data: a.Data})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), artifactStoreTimeout)
	defer cancel()
	_, _ = s.st.Put(ctx, state.Key{Kind: artifactKind, Owner: a.owner, ID: a.id}, b, state.PutOptions{TTL: s.lim.ttl})
}

// unpersist removes a from the shared store.
func (s *artifactStore) unpersist(a *storedArtifact) {
	if s.st == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), artifactStoreTimeout)
	defer cancel()
	_ = s.st.Delete(ctx, state.Key{Kind: artifactKind, Owner: a.owner, ID: a.id}, 0)
}

// fetch reads owner's artifact id from the shared store.
func (s *artifactStore) fetch(owner, session, id string) (*storedArtifact, bool) {
	if s.st == nil {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), artifactStoreTimeout)
	defer cancel()
	it, err := s.st.Get(ctx, state.Key{Kind: artifactKind, Owner: owner, ID: id})
	if err != nil {
		return nil, false
	}
	var v sharedArtifact
	if json.Unmarshal(it.Value, &v) != nil || v.Session != session {
		return nil, false
	}
	return &storedArtifact{id: id, owner: owner, session: session, expires: it.Expires,
		Artifact: core.Artifact{Name: v.Name, MIME: v.MIME, SHA256: v.SHA256, Size: int64(len(v.Data)), Data: v.Data}}, true
}
