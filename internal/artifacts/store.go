package artifacts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// storeTimeout bounds the state store operations of one Put, Get or Usage,
// so a stalled store cannot hold a request.
const storeTimeout = 2 * time.Second

// Config bounds the store. Zero byte and count limits mean none.
type Config struct {
	// TTL is how long an artifact is kept.
	TTL time.Duration
	// MaxBytes bounds every owner's artifacts together, in the store.
	MaxBytes int64
	// OwnerBytes and OwnerCount are each owner's quota.
	OwnerBytes int64
	OwnerCount int
	// OwnerQuota, when set, returns an owner's own byte and count quotas
	// (from its key's policy); zero values mean OwnerBytes and OwnerCount.
	OwnerQuota func(owner string) (int64, int)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Store keeps artifacts in a state.Store. It is safe for concurrent use.
type Store struct {
	cfg   Config
	st    state.Store
	quota *quota
}

// New returns a store over st.
func New(cfg Config, st state.Store) *Store {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Store{cfg: cfg, st: st, quota: newQuota(st, cfg.TTL, cfg.Now)}
}

// TTL is how long an artifact is kept after it is made.
func (s *Store) TTL() time.Duration { return s.cfg.TTL }

// ownerQuota returns owner's byte and count quotas.
func (s *Store) ownerQuota(owner string) (int64, int) {
	b, n := s.cfg.OwnerBytes, s.cfg.OwnerCount
	if s.cfg.OwnerQuota != nil {
		ob, on := s.cfg.OwnerQuota(owner)
		if ob > 0 {
			b = ob
		}
		if on > 0 {
			n = on
		}
	}
	return b, n
}

// Put keeps a's bytes (already checked, see Check) for owner's session
// ("" for one-shot calls) and returns its id. The same artifact put again
// (same owner, session, name and bytes) gets the same id and is neither
// stored nor counted twice. An artifact that is not kept is a *NotKept:
// quota when owner's quota is full, too_large for one over a quota alone,
// busy when the store's total is full, bad_request for an empty one,
// unavailable when the store cannot be reached.
func (s *Store) Put(ctx context.Context, owner, session string, a core.Artifact) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	size := int64(len(a.Data))
	ownerBytes, ownerCount := s.ownerQuota(owner)
	if size == 0 {
		return "", notKept(core.ErrInvalid, nil, "artifact %s has no bytes; not kept", a.Name)
	}
	if limit := minLimit(ownerBytes, s.cfg.MaxBytes); size > limit {
		return "", notKept(core.ErrTooLarge, nil, "artifact %s (%d bytes) is over the per-key artifact budget of %d bytes; not kept", a.Name, size, limit)
	}
	if a.SHA256 == "" {
		sum := sha256.Sum256(a.Data)
		a.SHA256 = hex.EncodeToString(sum[:])
	}
	id := artifactID(owner, session, a)
	if m, err := s.meta(ctx, owner, id); err == nil && m.Session == session {
		return id, nil // already kept
	}
	release, err := s.reserve(ctx, owner, a.Name, size, ownerBytes, ownerCount)
	if err != nil {
		return "", err
	}
	kept, err := s.write(ctx, owner, session, id, a)
	if err != nil || !kept { // failed, or kept concurrently by another put
		release()
	}
	if err != nil {
		return "", unavailable(a.Name, err)
	}
	return id, nil
}

// reserve counts size bytes against owner's quota and the store's total;
// release takes them back.
func (s *Store) reserve(ctx context.Context, owner, name string, size, ownerBytes int64, ownerCount int) (release func(), err error) {
	idx, err := s.quota.reserve(ctx, owner, size, ownerBytes, ownerCount)
	if err != nil {
		return nil, s.refusal(err, owner, name, size, ownerBytes, ownerCount)
	}
	if s.cfg.MaxBytes <= 0 {
		return func() { s.quota.release(context.WithoutCancel(ctx), owner, idx, size) }, nil
	}
	tidx, err := s.quota.reserve(ctx, "", size, s.cfg.MaxBytes, maxTotalCount)
	if err != nil {
		s.quota.release(ctx, owner, idx, size)
		if errors.As(err, new(errQuotaFull)) {
			return nil, notKept(core.ErrBusy, nil, "the server's artifact store is full (%d bytes held for all keys); artifact %s not kept, retry later", s.cfg.MaxBytes, name)
		}
		return nil, unavailable(name, err)
	}
	return func() {
		rctx := context.WithoutCancel(ctx)
		s.quota.release(rctx, owner, idx, size)
		s.quota.release(rctx, "", tidx, size)
	}, nil
}

// maxTotalCount leaves the store's total uncounted by number.
const maxTotalCount = 1 << 40

// refusal is the error of a quota reservation that failed.
func (s *Store) refusal(err error, owner, name string, size, maxBytes int64, maxCount int) error {
	var full errQuotaFull
	if !errors.As(err, &full) {
		return unavailable(name, err)
	}
	limit := any(maxBytes)
	if full.what == "count" {
		limit = maxCount
	}
	e := notKept(core.ErrQuota, nil, "artifact %s (%d bytes) not kept: this API key's artifact quota (%d bytes, %d artifacts, all replicas together) is full; artifacts are kept %s and free their share at most %s after they expire",
		name, size, maxBytes, maxCount, s.cfg.TTL, s.quota.window)
	e.Details = map[string]any{"budget": "artifact_" + full.what, "limit": limit}
	return e
}

// unavailable is the NotKept of a store failure.
func unavailable(name string, cause error) *NotKept {
	return notKept(core.ErrUnavailable, cause, "artifact %s not kept: the state store is unavailable, retry later", name)
}

// Get returns owner's artifact id made in session ("" for one-shot
// calls), bytes included. Another owner's artifact, one of another
// session and an expired one are core.ErrNotFound.
func (s *Store) Get(ctx context.Context, owner, session, id string) (core.Artifact, error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	m, err := s.meta(ctx, owner, id)
	if err != nil {
		return core.Artifact{}, err
	}
	if m.Session != session {
		return core.Artifact{}, notFound()
	}
	data, err := s.read(ctx, owner, id, m)
	if err != nil {
		return core.Artifact{}, err
	}
	return core.Artifact{Name: m.Name, MIME: m.MIME, SHA256: m.SHA256, Size: m.Size, Data: data}, nil
}

// Exists reports whether owner's artifact id of session is still kept,
// without reading its bytes.
func (s *Store) Exists(ctx context.Context, owner, session, id string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	m, err := s.meta(ctx, owner, id)
	switch {
	case errors.Is(err, core.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return m.Session == session, nil
}

// Usage returns owner's artifact bytes and count as the quota counts them
// (every replica's; expired ones leave within a window).
func (s *Store) Usage(ctx context.Context, owner string) (int64, int, error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	b, n, err := s.quota.usage(ctx, owner)
	return b, int(n), err
}

// artifactID names an artifact after its owner, session, hash and name,
// so the same artifact has the same id on every replica.
func artifactID(owner, session string, a core.Artifact) string {
	sum := sha256.Sum256([]byte(owner + "\x00" + session + "\x00" + a.SHA256 + "\x00" + a.Name))
	return "art_" + hex.EncodeToString(sum[:16])
}

// minLimit is the smaller of two limits, where 0 means none.
func minLimit(a, b int64) int64 {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}
