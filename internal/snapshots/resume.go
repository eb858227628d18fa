package snapshots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// State store kinds of the resume records and their wake locks.
const (
	kindResume = "session-resume"
	kindWake   = "session-wake"
)

// Resume says how a session comes back after its container is gone: the
// internal snapshot it was last saved in (hibernation, a worker's
// shutdown, or the automatic snapshot after a call), and the request that
// opened it, so a wake opens it again alike (limits, environment,
// network policy) under the same id and with the same maximum life.
type Resume struct {
	Owner   string `json:"owner"`
	Session string `json:"session"`
	// Snapshot is the internal snapshot (Meta.Internal) to restore.
	Snapshot string `json:"snapshot"`
	// At is when it was taken.
	At time.Time `json:"at"`
	// Hibernated is true when the session's container was freed on
	// purpose (idle, or its worker's shutdown); false for an automatic
	// snapshot of a session still live.
	Hibernated bool `json:"hibernated,omitempty"`
	// Open is the session's open request (its Code, Archive and Data
	// emptied).
	Open core.Request `json:"open"`
	// Created and ExpiresAt are the session's: a wake keeps its maximum
	// life.
	Created   time.Time `json:"created"`
	ExpiresAt time.Time `json:"expires_at"`
	// Skipped are the names the snapshot could not save.
	Skipped []core.SnapshotSkip `json:"skipped,omitempty"`
}

// Resumes keeps sessions' resume records beside their snapshots. It is
// safe for concurrent use by any number of processes sharing the store.
type Resumes struct {
	st    state.Store
	snaps *Store
	now   func() time.Time
}

// NewResumes returns the resume records over st, whose internal
// snapshots live in snaps.
func NewResumes(st state.Store, snaps *Store) *Resumes {
	return &Resumes{st: st, snaps: snaps, now: time.Now}
}

// Snapshots returns the store the resume records' snapshots live in.
func (r *Resumes) Snapshots() *Store { return r.snaps }

func resumeKey(owner, id string) state.Key { return state.Key{Kind: kindResume, Owner: owner, ID: id} }
func wakeKey(owner, id string) state.Key   { return state.Key{Kind: kindWake, Owner: owner, ID: id} }

// ttl is how long a record of a session expiring at exp is kept.
func (r *Resumes) ttl(exp time.Time) time.Duration {
	return max(exp.Sub(r.now())+time.Minute, time.Minute)
}

// Get returns owner's resume record of session id; none (or one past its
// session's maximum life) is core.ErrNotFound.
func (r *Resumes) Get(ctx context.Context, owner, id string) (Resume, error) {
	it, err := r.st.Get(ctx, resumeKey(owner, id))
	if err != nil {
		if errors.Is(err, state.ErrNotFound) {
			return Resume{}, core.Errorf("snapshots", core.ErrNotFound, "no snapshot to resume session "+id+" from")
		}
		return Resume{}, fmt.Errorf("snapshots: read resume of %s: %w", id, err)
	}
	var v Resume
	if json.Unmarshal(it.Value, &v) != nil || v.Owner != owner {
		return Resume{}, core.Errorf("snapshots", core.ErrNotFound, "no snapshot to resume session "+id+" from")
	}
	if !v.ExpiresAt.IsZero() && !r.now().Before(v.ExpiresAt) {
		r.Drop(context.WithoutCancel(ctx), owner, id)
		return Resume{}, core.Errorf("snapshots", core.ErrNotFound, "session "+id+" is past its maximum life")
	}
	return v, nil
}

// Put stores v as its session's resume record and deletes the snapshot
// the record it replaces named.
func (r *Resumes) Put(ctx context.Context, v Resume) error {
	old, oerr := r.Get(ctx, v.Owner, v.Session)
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("snapshots: encode resume of %s: %w", v.Session, err)
	}
	if _, err := r.st.Put(ctx, resumeKey(v.Owner, v.Session), b, state.PutOptions{TTL: r.ttl(v.ExpiresAt)}); err != nil {
		return fmt.Errorf("snapshots: write resume of %s: %w", v.Session, err)
	}
	if oerr == nil && old.Snapshot != "" && old.Snapshot != v.Snapshot {
		_ = r.snaps.Delete(context.WithoutCancel(ctx), v.Owner, old.Snapshot)
	}
	return nil
}

// SetHibernated marks owner's resume record of session id hibernated (or
// not) without changing its snapshot.
func (r *Resumes) SetHibernated(ctx context.Context, owner, id string, on bool) error {
	v, err := r.Get(ctx, owner, id)
	if err != nil {
		return err
	}
	v.Hibernated = on
	return r.Put(ctx, v)
}

// Drop deletes owner's resume record of session id and its snapshot (the
// session was closed or ended for good).
func (r *Resumes) Drop(ctx context.Context, owner, id string) {
	it, err := r.st.Get(ctx, resumeKey(owner, id))
	if err != nil {
		return
	}
	_ = r.st.Delete(ctx, resumeKey(owner, id), 0)
	var v Resume
	if json.Unmarshal(it.Value, &v) == nil && v.Owner == owner && v.Snapshot != "" {
		_ = r.snaps.Delete(ctx, owner, v.Snapshot)
	}
}

// Lock takes the wake lock of owner's session id for at most ttl; false
// when another caller holds it.
func (r *Resumes) Lock(ctx context.Context, owner, id string, ttl time.Duration) (bool, error) {
	_, err := r.st.Put(ctx, wakeKey(owner, id), []byte("1"), state.PutOptions{IfVersion: -1, TTL: ttl})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, state.ErrConflict):
		return false, nil
	}
	return false, fmt.Errorf("snapshots: wake lock of %s: %w", id, err)
}

// Locked reports whether the wake lock of owner's session id is held.
func (r *Resumes) Locked(ctx context.Context, owner, id string) bool {
	_, err := r.st.Get(ctx, wakeKey(owner, id))
	return err == nil
}

// Unlock releases the wake lock of owner's session id.
func (r *Resumes) Unlock(ctx context.Context, owner, id string) {
	_ = r.st.Delete(ctx, wakeKey(owner, id), 0)
}
