package snapshots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// Engine is what Keeper needs of a worker's sandbox engine;
// the sandbox engine satisfies it.
type Engine interface {
	Handle(ctx context.Context, req core.Request) (core.Result, error)
	SnapshotSession(ctx context.Context, owner, id string, maxBytes int64, sink core.SnapshotSink) (core.SnapshotReport, error)
	RestoreSession(ctx context.Context, owner, id, mode string, maxBytes int64, src core.SnapshotSource) (core.SnapshotReport, error)
}

// sessionEnvironment is an Engine that knows the environment a session
// was opened in (the sandbox engine), recorded with its snapshot.
type sessionEnvironment interface {
	SessionEnvironment(owner, id string) (string, error)
}

// Keeper is a worker's engine with session snapshots: it takes
// OpSessionSnapshot and OpSessionRestore jobs (streaming the parts between
// the sandbox and the store) and logs every session call. Everything else
// goes to the engine as is.
type Keeper struct {
	engine Engine
	store  *Store
	calls  *CallLog
	log    *slog.Logger
	now    func() time.Time
	res    *resumeState // nil: sessions do not outlive their container
}

// NewKeeper wraps engine; log (nil: discarded) receives failed log writes.
func NewKeeper(engine Engine, store *Store, calls *CallLog, log *slog.Logger) *Keeper {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Keeper{engine: engine, store: store, calls: calls, log: log, now: time.Now}
}

// Handle runs req: a snapshot op here, anything else on the engine (a
// session call is logged once it ended).
func (k *Keeper) Handle(ctx context.Context, req core.Request) (core.Result, error) {
	switch req.Op {
	case core.OpSessionSnapshot:
		return k.gated(ctx, req, func() (core.Result, error) { return k.snapshot(ctx, req) })
	case core.OpSessionRestore:
		return k.restore(ctx, req)
	case core.OpSessionOpen:
		if req.SessionID != "" && req.SnapshotID != "" {
			return k.wake(ctx, req)
		}
		res, err := k.engine.Handle(ctx, req)
		if err == nil && res.SessionID != "" {
			k.remember(ctx, res.SessionID, req)
		}
		return res, err
	case core.OpSessionClose:
		res, err := k.engine.Handle(ctx, req)
		if err == nil || errors.Is(err, core.ErrNotFound) {
			bg := context.WithoutCancel(ctx)
			o := k.session(req.SessionID)
			k.forget(req.SessionID)
			if o != nil { // an automatic snapshot being stored lands before the drop
				o.persist.Lock()
				o.persist.Unlock()
			}
			if k.res != nil {
				if _, gerr := k.res.cfg.Resumes.Get(bg, req.Owner, req.SessionID); gerr == nil && err != nil {
					res, err = core.Result{Status: core.StatusOK}, nil // a hibernated session closes by losing its snapshot
				}
				k.res.cfg.Resumes.Drop(bg, req.Owner, req.SessionID)
			}
			if err == nil {
				_ = k.calls.Delete(bg, req.Owner, req.SessionID)
			}
		}
		return res, err
	case core.OpSessionInterrupt, core.OpSessionInput, core.OpSessionInfo:
		return k.engine.Handle(ctx, req) // beside a running call: no gate
	}
	exec := req.SessionID != "" && (req.Op == "" || req.Op == core.OpExec)
	res, err := k.gated(ctx, req, func() (core.Result, error) { return k.engine.Handle(ctx, req) })
	if err == nil && exec && res.Status != core.StatusRejected {
		if lerr := k.calls.Append(context.WithoutCancel(ctx), req.Owner, req.SessionID, CallOf(req, res, k.now())); lerr != nil {
			k.log.Warn("snapshots: session call not logged", "session", req.SessionID, "err", lerr)
		}
	}
	if req.SessionID != "" && (res.SessionEnded || errors.Is(err, core.ErrNotFound)) {
		k.forget(req.SessionID)
	} else if err == nil && res.Status != core.StatusRejected && (exec || req.Op == core.OpFilePut || req.Op == core.OpSessionRestart) {
		k.autosnap(req.Owner, req.SessionID)
	}
	return res, err
}

// snapshot saves session req.SessionID as snapshot req.SnapshotID, with
// the session's call log and req's Limits and Image (the environment).
func (k *Keeper) snapshot(ctx context.Context, req core.Request) (core.Result, error) {
	w, err := k.store.Create(ctx, req.Owner, req.SnapshotID)
	if err != nil {
		return core.Result{}, err
	}
	rep, err := k.engine.SnapshotSession(ctx, req.Owner, req.SessionID, k.store.cfg.MaxBytes, func(part string, _ int64, chunk []byte) error {
		return w.Write(ctx, part, chunk)
	})
	if err == nil {
		for _, part := range core.SnapshotParts { // an empty part is stored too
			if err = w.Write(ctx, part, nil); err != nil {
				break
			}
		}
	}
	var calls []Call
	if err == nil {
		calls, err = k.calls.Calls(ctx, req.Owner, req.SessionID)
	}
	var m Meta
	if err == nil {
		env := req.Environment // the caller's record of it
		if se, ok := k.engine.(sessionEnvironment); ok {
			if opened, err := se.SessionEnvironment(req.Owner, req.SessionID); err == nil && opened != "" {
				env = opened // the sandbox's, where the session was opened
			}
		}
		if env == "" {
			env = string(core.Python)
		}
		var limits core.Limits // the session's, sent as the job's data
		if len(req.Data) > 0 {
			_ = json.Unmarshal(req.Data, &limits)
		}
		m, err = w.Commit(ctx, Meta{Session: req.SessionID, Report: rep, Environment: env, Limits: limits,
			Background: req.Background, Calls: calls, Hidden: req.Restore == "hidden"})
	}
	if err != nil {
		w.Abort(context.WithoutCancel(ctx))
		return core.Result{}, err
	}
	rep.Bytes = m.Bytes
	return core.Result{Status: core.StatusOK, SessionID: req.SessionID, Snapshot: &rep}, nil
}

// restore loads snapshot req.SnapshotID into the fresh session
// req.SessionID: the namespace and work folder, or (replay) the work
// folder and then the call log run again, call by call. The session's
// log starts as the snapshot's.
func (k *Keeper) restore(ctx context.Context, req core.Request) (core.Result, error) {
	m, err := k.store.Get(ctx, req.Owner, req.SnapshotID)
	if err != nil {
		return core.Result{}, err
	}
	mode := req.Restore
	switch mode {
	case "", core.RestoreNamespace:
		mode = core.RestoreNamespace
	case core.RestoreReplay:
	default:
		return core.Result{}, core.Errorf("snapshots", core.ErrInvalid, fmt.Sprintf("restore %q is not one of namespace, replay", req.Restore))
	}
	ctlMode := "namespace"
	if mode == core.RestoreReplay {
		ctlMode = "files"
	}
	rep, err := k.engine.RestoreSession(ctx, req.Owner, req.SessionID, ctlMode, k.store.cfg.MaxBytes, func(part string, write func([]byte) error) error {
		return k.store.Read(ctx, m, part, write)
	})
	if err != nil {
		return core.Result{}, err
	}
	if mode == core.RestoreNamespace {
		for _, c := range m.Calls {
			_ = k.calls.Append(context.WithoutCancel(ctx), req.Owner, req.SessionID, c)
		}
		// What the snapshot skipped is still missing after the restore.
		rep.Skipped = append(append([]core.SnapshotSkip{}, m.Report.Skipped...), rep.Skipped...)
	} else {
		// The replay rebuilds what the snapshot skipped (its calls made it).
		rep.Skipped = []core.SnapshotSkip{}
		rep.Replay = []core.ReplayedCall{}
		for i, c := range m.Calls {
			res, err := k.Handle(ctx, core.Request{Op: core.OpExec, Owner: req.Owner, SessionID: req.SessionID,
				Code: c.Code, Language: c.Language, Generated: c.Generated, Limits: core.Limits{Timeout: m.Limits.Timeout}})
			rc := core.ReplayedCall{Index: i, Status: res.Status}
			switch {
			case err != nil:
				rc.Status, rc.Message = core.StatusError, err.Error()
			case res.Error != nil:
				rc.Message = res.Error.Name + ": " + res.Error.Value
			case res.Status != core.StatusOK:
				rc.Message = res.Message
			}
			rep.Replay = append(rep.Replay, rc)
		}
	}
	rep.Bytes = m.Bytes
	return core.Result{Status: core.StatusOK, SessionID: req.SessionID, Snapshot: &rep}, nil
}
