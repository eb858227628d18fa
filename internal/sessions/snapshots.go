package sessions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/wire"
)

// Snapshotter takes and restores session snapshots on the worker holding
// the session (jobs.Client satisfies it). Errors are matched like
// Backend's; a snapshot over its bound is core.ErrTooLarge, over the
// owner's quota core.ErrQuota.
type Snapshotter interface {
	// SnapshotSession saves owner's session id as snapshot snapID with the
	// session's limits; hidden keeps it out of the owner's list.
	SnapshotSession(ctx context.Context, owner, id, snapID string, limits core.Limits, background, hidden bool) (core.SnapshotReport, error)
	// RestoreSession loads snapshot snapID into owner's fresh session id.
	RestoreSession(ctx context.Context, owner, id, snapID, mode string) (core.SnapshotReport, error)
}

// Snapshots is the snapshot side of the sessions: snapshot, restore,
// fork, the snapshots' list, and the call log as a notebook. Every
// operation is on the caller's own sessions and snapshots; another
// owner's are not found.
type Snapshots struct {
	svc   *Service
	snap  Snapshotter // nil: no snapshots on this server
	store *snapshots.Store
	calls *snapshots.CallLog
	// resolve turns a snapshot's environment into the target its restored
	// session opens in, for the snapshot's owner (nil: built-in python only).
	resolve EnvResolver
}

// EnvResolver resolves the environment name a snapshot recorded into the
// target a restored session of owner opens in, refusing one owner may no
// longer use (the api server's environment check).
type EnvResolver func(ctx context.Context, owner, name string) (environments.Target, error)

// SetEnvironments makes restores and forks open their session in the
// snapshot's environment, resolved by r.
func (s *Snapshots) SetEnvironments(r EnvResolver) { s.resolve = r }

// target is the environment a session restored from m opens in: the zero
// Target (python) for the built-in python one, else what the resolver
// says; without a resolver another environment is refused, never restored
// into the wrong image.
func (s *Snapshots) target(ctx context.Context, owner string, m snapshots.Meta) (environments.Target, error) {
	if m.Environment == "" || m.Environment == environments.Python {
		return environments.Target{}, nil
	}
	if s.resolve == nil {
		return environments.Target{}, core.Errorf("sessions", core.ErrUnavailable, fmt.Sprintf("this server cannot restore sessions of environment %q", m.Environment))
	}
	return s.resolve(ctx, owner, m.Environment)
}

// NewSnapshots returns the snapshot operations of svc over snap (nil when
// the backend takes none), store and calls.
func NewSnapshots(svc *Service, snap Snapshotter, store *snapshots.Store, calls *snapshots.CallLog) *Snapshots {
	return &Snapshots{svc: svc, snap: snap, store: store, calls: calls}
}

// unavailable is the error of a server whose backend takes no snapshots.
func unavailable() error {
	return core.Errorf("", core.ErrUnavailable, "session snapshots are not available on this server")
}

// newSnapshotID returns a fresh snapshot id.
func newSnapshotID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "snap-" + hex.EncodeToString(b)
}

// Take saves rec as a new snapshot.
func (s *Snapshots) Take(ctx context.Context, rec sessionrecords.Record) (wire.SnapshotCreated, error) {
	if s.snap == nil {
		return wire.SnapshotCreated{}, unavailable()
	}
	id := newSnapshotID()
	rep, err := s.snap.SnapshotSession(ctx, rec.Owner, rec.ID, id, rec.Limits, rec.Background, false)
	if err != nil {
		return wire.SnapshotCreated{}, s.svc.failed(ctx, rec, err)
	}
	return wire.SnapshotCreated{SnapshotID: id, Bytes: rep.Bytes, Skipped: skips(rep.Skipped)}, nil
}

// List returns owner's snapshots.
func (s *Snapshots) List(ctx context.Context, owner string) (wire.SnapshotList, error) {
	ms, err := s.store.List(ctx, owner)
	if err != nil {
		return wire.SnapshotList{}, err
	}
	out := wire.SnapshotList{Snapshots: make([]wire.Snapshot, 0, len(ms))}
	for _, m := range ms {
		out.Snapshots = append(out.Snapshots, view(m))
	}
	return out, nil
}

// Get returns owner's snapshot id.
func (s *Snapshots) Get(ctx context.Context, owner, id string) (wire.Snapshot, error) {
	m, err := s.store.Get(ctx, owner, id)
	if err != nil {
		return wire.Snapshot{}, err
	}
	return view(m), nil
}

// Delete removes owner's snapshot id.
func (s *Snapshots) Delete(ctx context.Context, owner, id string) error {
	return s.store.Delete(ctx, owner, id)
}

// Limits returns the limits owner's snapshot id was taken with, as a
// request would give them (to be checked against owner's ceiling).
func (s *Snapshots) Limits(ctx context.Context, owner, id string) (*wire.Limits, bool, error) {
	m, err := s.store.Get(ctx, owner, id)
	if err != nil {
		return nil, false, err
	}
	l := m.Limits
	return &wire.Limits{MemoryBytes: l.Memory, CPUs: l.CPUs, Pids: l.Pids, TimeoutSeconds: l.Timeout.Seconds(),
		OutputBytes: l.OutputBytes, TmpfsBytes: l.TmpfsBytes, NoFile: l.NoFile, FileSizeBytes: l.FileSize}, m.Background, nil
}

// Open opens a session of owner from its snapshot snapID (mode: namespace
// or replay) with limits, within owner's budgets, and returns it with the
// restore's report. A restore that fails closes the new session.
func (s *Snapshots) Open(ctx context.Context, owner, snapID, mode string, limits core.Limits, background bool, b keys.Budget, d core.Limits) (wire.Session, error) {
	if s.snap == nil {
		return wire.Session{}, unavailable()
	}
	switch mode {
	case "":
		mode = wire.RestoreNamespace
	case wire.RestoreNamespace, wire.RestoreReplay:
	default:
		return wire.Session{}, core.Errorf("", core.ErrInvalid, fmt.Sprintf(`"restore" must be "namespace" or "replay", not %q`, mode))
	}
	m, err := s.store.Get(ctx, owner, snapID)
	if err != nil {
		return wire.Session{}, err
	}
	env, err := s.target(ctx, owner, m)
	if err != nil {
		return wire.Session{}, err
	}
	v, err := s.svc.OpenIn(ctx, owner, env, limits, background, b, d)
	if err != nil {
		return wire.Session{}, err
	}
	rep, err := s.snap.RestoreSession(ctx, owner, v.ID, snapID, mode)
	if err != nil {
		if rec, ok := s.svc.records.Get(context.WithoutCancel(ctx), owner, v.ID, false); ok {
			_ = s.svc.Close(context.WithoutCancel(ctx), rec)
		}
		return wire.Session{}, fmt.Errorf("restore of %s: %w", snapID, err)
	}
	v.Restored = &wire.SessionRestored{SnapshotID: snapID, Restore: mode, Names: nonNil(rep.Names), Skipped: skips(rep.Skipped)}
	for _, c := range rep.Replay {
		v.Restored.Replay = append(v.Restored.Replay, wire.ReplayedCall{Index: c.Index, Status: string(c.Status), Message: c.Message})
	}
	return v, nil
}

// Fork opens a new session of rec's owner with rec's state (namespace and
// work folder, through a snapshot that is deleted afterwards), within the
// owner's budgets; the two are independent afterwards.
func (s *Snapshots) Fork(ctx context.Context, rec sessionrecords.Record, b keys.Budget, d core.Limits) (wire.Session, error) {
	if s.snap == nil {
		return wire.Session{}, unavailable()
	}
	id := newSnapshotID()
	if _, err := s.snap.SnapshotSession(ctx, rec.Owner, rec.ID, id, rec.Limits, rec.Background, true); err != nil {
		return wire.Session{}, s.svc.failed(ctx, rec, err)
	}
	defer func() { _ = s.store.Delete(context.WithoutCancel(ctx), rec.Owner, id) }()
	v, err := s.Open(ctx, rec.Owner, id, wire.RestoreNamespace, rec.Limits, rec.Background, b, d)
	if v.Restored != nil {
		v.Restored.SnapshotID = ""
	}
	return v, err
}

// Notebook returns rec's call log as an nbformat 4 notebook.
func (s *Snapshots) Notebook(ctx context.Context, rec sessionrecords.Record) ([]byte, error) {
	calls, err := s.calls.Calls(ctx, rec.Owner, rec.ID)
	if err != nil {
		return nil, err
	}
	return snapshots.Notebook(calls)
}

// view is a snapshot's record as answered.
func view(m snapshots.Meta) wire.Snapshot {
	l := m.Limits
	return wire.Snapshot{SnapshotID: m.ID, SessionID: m.Session, Created: m.Created, Bytes: m.Bytes, Environment: m.Environment,
		Limits: wire.Limits{MemoryBytes: l.Memory, CPUs: l.CPUs, Pids: l.Pids, TimeoutSeconds: l.Timeout.Seconds(),
			OutputBytes: l.OutputBytes, TmpfsBytes: l.TmpfsBytes, NoFile: l.NoFile, FileSizeBytes: l.FileSize},
		Names: nonNil(m.Report.Names), Modules: m.Report.Modules, Skipped: skips(m.Report.Skipped), Calls: len(m.Calls)}
}

func skips(in []core.SnapshotSkip) []wire.SnapshotSkip {
	out := make([]wire.SnapshotSkip, 0, len(in))
	for _, k := range in {
		out = append(out, wire.SnapshotSkip{Name: k.Name, Type: k.Type, Reason: k.Reason})
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
