package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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

// share counts a against owner's quota (maxBytes, maxCount) in the state
// store and writes it there with the artifact TTL, so every replica, and
// this one after a restart, can serve it. It returns the artifact's id
// and whether this replica should keep its own copy: an artifact with a
// hash has an id derived from owner, session, hash and name, so the same
// artifact made again (an event replayed, the same call retried on another
// replica) finds its record, is not counted twice and is not kept again.
// An artifact the store cannot hold (over state.MaxValueSize) or failed to
// write stays on this replica only, still counted.
func (s *artifactStore) share(owner, session string, a core.Artifact, maxBytes int64, maxCount int) (string, bool, *Error) {
	ctx, cancel := context.WithTimeout(context.Background(), artifactStoreTimeout)
	defer cancel()
	size := int64(len(a.Data))
	idx, err := s.quota.reserve(ctx, owner, size, maxBytes, maxCount)
	var full errQuotaFull
	switch {
	case errors.As(err, &full):
		limit := any(maxBytes)
		if full.what == "count" {
			limit = maxCount
		}
		return "", false, newError(core.ErrQuota, fmt.Sprintf("artifact %s (%d bytes) not kept: this API key's artifact quota (%d bytes, %d artifacts, all replicas together) is full; artifacts are kept %s and free their share at most %s after they expire",
			a.Name, size, maxBytes, maxCount, s.lim.ttl, s.quota.window)).
			withDetails(map[string]any{"budget": "artifact_" + full.what, "limit": limit})
	case err != nil:
		return "", false, newError(core.ErrUnavailable, fmt.Sprintf("artifact %s not kept: the state store is unavailable, retry later", a.Name))
	}
	id := artifactID(owner, session, a)
	b, err := json.Marshal(sharedArtifact{Session: session, Name: a.Name, MIME: a.MIME, SHA256: a.SHA256, Data: a.Data})
	if err != nil {
		return id, true, nil
	}
	opt := state.PutOptions{TTL: s.lim.ttl}
	if a.SHA256 != "" {
		opt.IfVersion = -1
	}
	if _, err := s.st.Put(ctx, state.Key{Kind: artifactKind, Owner: owner, ID: id}, b, opt); errors.Is(err, state.ErrConflict) {
		s.quota.release(ctx, owner, idx, size)
		return id, false, nil
	}
	return id, true, nil
}

// artifactID names an artifact: derived from owner, session, hash and name
// when it has a hash (so the same artifact has the same id on every
// replica), else random.
func artifactID(owner, session string, a core.Artifact) string {
	if a.SHA256 == "" {
		return newID("art_")
	}
	sum := sha256.Sum256([]byte(owner + "\x00" + session + "\x00" + a.SHA256 + "\x00" + a.Name))
	return "art_" + hex.EncodeToString(sum[:16])
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
