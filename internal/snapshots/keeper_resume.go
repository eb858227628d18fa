package snapshots

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// ResumeConfig turns on the sessions that outlive their container (issue
// 30) in a Keeper: idle sessions hibernate, a worker's shutdown saves its
// sessions, and a session is saved after its calls so a worker's crash
// loses at most the calls since.
type ResumeConfig struct {
	// Resumes keeps the sessions' resume records; nil turns it all off.
	Resumes *Resumes
	// Records marks the API's session records hibernated (nil: none).
	Records RecordMarker
	// HibernateAfter is how long a session stays idle before it is saved
	// and its container freed (0: never; Run does nothing).
	HibernateAfter time.Duration
	// AutoMaxBytes bounds the automatic snapshot taken after a call that
	// ran (0: none are taken): a namespace and work folder over it are not
	// saved after calls (tried again at most once a minute).
	AutoMaxBytes int64
	// AutoQuiet is how long a session goes without a call ending before
	// its automatic snapshot is taken, so a burst of calls is saved once,
	// after its last call, and a snapshot never holds up the next call
	// of a burst (0: at once). A session whose calls keep coming is saved
	// at the latest autoMaxWait after the first call not yet saved.
	AutoQuiet time.Duration
}

// RecordMarker marks a session's API record hibernated or awake
// (sessionrecords.Store satisfies it).
type RecordMarker interface {
	SetHibernated(ctx context.Context, owner, id string, on bool)
}

// SessionLister lists a worker's live sessions (the sandbox engine).
type SessionLister interface {
	Sessions(owner string) []core.SessionInfo
}

// autoMaxWait bounds how long AutoQuiet may hold back the automatic
// snapshot of a session whose calls keep ending.
const autoMaxWait = 5 * time.Second

// autoRetry is how long a session whose namespace was over AutoMaxBytes
// goes without automatic snapshots.
const autoRetry = time.Minute

// opened is what the Keeper remembers of a live session it opened.
type opened struct {
	req       core.Request
	created   time.Time
	expiresAt time.Time
	// remembered is when this Keeper learned of it (see prune).
	remembered time.Time
	// gate keeps calls, files and snapshots of the session apart from its
	// hibernation: a session is saved and closed with no call in between.
	gate sync.Mutex
	// persist is held while a snapshot of the session is being made its
	// resume record (taken after gate; an automatic snapshot stores its
	// bytes with gate released, so resume records are written one at a
	// time, in the order their snapshots were taken).
	persist sync.Mutex
	// auto* coalesce automatic snapshots: one runs at a time, and a call
	// ending while it runs asks for one more after it.
	autoRunning, autoAgain bool
	tooBig                 time.Time
	// lastEnd is when its last call ended, unsaved when the first call
	// not yet in a snapshot ended (zero: none).
	lastEnd, unsaved time.Time
}

// resumeState is the Keeper's side of ResumeConfig.
type resumeState struct {
	cfg  ResumeConfig
	mu   sync.Mutex
	open map[string]*opened // by session id
	wg   sync.WaitGroup     // automatic snapshots running
}

// EnableResume turns on hibernation, shutdown saves and automatic
// snapshots with cfg (call before the Keeper takes jobs).
func (k *Keeper) EnableResume(cfg ResumeConfig) {
	if cfg.Resumes == nil {
		return
	}
	k.res = &resumeState{cfg: cfg, open: map[string]*opened{}}
}

// session returns what is remembered of session id (nil: not opened here).
func (k *Keeper) session(id string) *opened {
	if k.res == nil || id == "" {
		return nil
	}
	k.res.mu.Lock()
	defer k.res.mu.Unlock()
	return k.res.open[id]
}

// remember records session id of req's open, with its life read from the
// engine.
func (k *Keeper) remember(ctx context.Context, id string, req core.Request) {
	if k.res == nil {
		return
	}
	req.Code, req.Archive, req.Data, req.SnapshotID, req.Restore, req.SessionID, req.JobID = "", nil, nil, "", "", "", ""
	o := &opened{req: req, created: k.now(), expiresAt: req.SessionExpires, remembered: k.now()}
	if res, err := k.engine.Handle(ctx, core.Request{Op: core.OpSessionInfo, Owner: req.Owner, SessionID: id}); err == nil && res.Session != nil {
		o.created, o.expiresAt = res.Session.Created, res.Session.ExpiresAt
	}
	if o.expiresAt.IsZero() {
		o.expiresAt = k.now().Add(2 * time.Hour) // the sandbox's default maximum life
	}
	k.res.mu.Lock()
	k.res.open[id] = o
	k.res.mu.Unlock()
}

// forget drops what is remembered of session id.
func (k *Keeper) forget(id string) {
	if k.res != nil {
		k.res.mu.Lock()
		delete(k.res.open, id)
		k.res.mu.Unlock()
	}
}

// gated runs a session operation of req under its session's gate.
func (k *Keeper) gated(ctx context.Context, req core.Request, run func() (core.Result, error)) (core.Result, error) {
	o := k.session(req.SessionID)
	if o == nil {
		return run()
	}
	o.gate.Lock()
	defer o.gate.Unlock()
	return run()
}

// wake opens session req.SessionID again from its resume record (a
// request of the jobs client after the session's container was found
// gone): a fresh container under the same id, limits and maximum life,
// its latest snapshot's namespace and work folder loaded (req.SnapshotID,
// the one the client saw, may have been replaced since). The report's Skipped
// are the names the snapshot could not save.
func (k *Keeper) wake(ctx context.Context, req core.Request) (core.Result, error) {
	if k.res == nil {
		return core.Result{}, core.Errorf("snapshots", core.ErrUnavailable, "this worker does not resume sessions")
	}
	r, err := k.res.cfg.Resumes.Get(ctx, req.Owner, req.SessionID)
	if err != nil {
		return core.Result{}, err
	}
	m, err := k.store.Get(ctx, req.Owner, r.Snapshot)
	if err != nil {
		return core.Result{}, fmt.Errorf("snapshots: wake %s: %w", req.SessionID, err)
	}
	open := r.Open
	open.Op, open.Owner, open.SessionID, open.SessionExpires, open.JobID = core.OpSessionOpen, req.Owner, req.SessionID, r.ExpiresAt, req.JobID
	if _, err := k.engine.Handle(ctx, open); err != nil {
		return core.Result{}, fmt.Errorf("snapshots: wake %s: open: %w", req.SessionID, err)
	}
	rep, err := k.engine.RestoreSession(ctx, req.Owner, req.SessionID, "namespace", k.store.cfg.MaxBytes, func(part string, write func([]byte) error) error {
		return k.store.Read(ctx, m, part, write)
	})
	if err != nil {
		_, _ = k.engine.Handle(context.WithoutCancel(ctx), core.Request{Op: core.OpSessionClose, Owner: req.Owner, SessionID: req.SessionID})
		return core.Result{}, fmt.Errorf("snapshots: wake %s: restore: %w", req.SessionID, err)
	}
	k.remember(ctx, req.SessionID, open)
	if o := k.session(req.SessionID); o != nil {
		o.created = r.Created
	}
	bg := context.WithoutCancel(ctx)
	if r.Hibernated {
		_ = k.res.cfg.Resumes.SetHibernated(bg, req.Owner, req.SessionID, false)
	}
	if k.res.cfg.Records != nil {
		k.res.cfg.Records.SetHibernated(bg, req.Owner, req.SessionID, false)
	}
	rep.Skipped = append(append([]core.SnapshotSkip{}, r.Skipped...), rep.Skipped...)
	rep.Bytes = m.Bytes
	return core.Result{Status: core.StatusOK, SessionID: req.SessionID, Snapshot: &rep}, nil
}

// save takes an internal snapshot of session id of owner within maxBytes
// and makes it the session's resume record; with hibernate the session's
// container is then freed. The session's gate and persist lock must be
// held. release (nil: none) is called once the snapshot has left the
// sandbox, before it is stored: the caller may then let the session's
// next call run while the snapshot is written and synced (a snapshot of
// up to heldBytes is held in memory until then; a larger one is streamed
// into the store before release).
func (k *Keeper) save(ctx context.Context, owner, id string, o *opened, maxBytes int64, hibernate bool, release func()) error {
	if release == nil {
		release = func() {}
	}
	snapID := "hib-" + randomHex()
	w, err := k.store.CreateInternal(ctx, owner, snapID, o.expiresAt.Sub(k.now())+time.Minute)
	if err != nil {
		release()
		return err
	}
	held := &heldParts{w: w, max: heldBytes}
	rep, err := k.engine.SnapshotSession(ctx, owner, id, maxBytes, func(part string, _ int64, chunk []byte) error {
		return held.write(ctx, part, chunk)
	})
	release()
	if err == nil {
		err = held.spill(ctx)
	}
	if err == nil {
		for _, part := range core.SnapshotParts {
			if err = w.Write(ctx, part, nil); err != nil {
				break
			}
		}
	}
	if err == nil {
		env := o.req.Environment
		if env == "" {
			env = string(core.Python)
		}
		_, err = w.Commit(ctx, Meta{Session: id, Report: rep, Environment: env, Limits: o.req.Limits, Background: o.req.Background})
	}
	if err != nil {
		w.Abort(context.WithoutCancel(ctx))
		return err
	}
	bg := context.WithoutCancel(ctx)
	r := Resume{Owner: owner, Session: id, Snapshot: snapID, At: k.now(), Hibernated: hibernate, Open: o.req,
		Created: o.created, ExpiresAt: o.expiresAt, Skipped: rep.Skipped}
	if err := k.res.cfg.Resumes.Put(bg, r); err != nil {
		_ = k.store.Delete(bg, owner, snapID)
		return err
	}
	if !hibernate {
		return nil
	}
	k.forget(id)
	if _, err := k.engine.Handle(bg, core.Request{Op: core.OpSessionClose, Owner: owner, SessionID: id}); err != nil && !errors.Is(err, core.ErrNotFound) {
		k.log.Warn("snapshots: hibernated session not closed", "session", id, "err", err)
	}
	if k.res.cfg.Records != nil {
		k.res.cfg.Records.SetHibernated(bg, owner, id, true)
	}
	k.log.Info("session hibernated", "session", id, "owner", owner, "snapshot", snapID, "bytes", w.bytes, "skipped", len(rep.Skipped))
	return nil
}

func randomHex() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
