package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/wire"
)

// Snapshotter takes and restores session snapshots on the worker holding
// the session (jobs.Client satisfies it).
type Snapshotter interface {
	// SnapshotSessionIn saves owner's session id (in environment env, with
	// limits) as snapshot snapID; hidden keeps it out of the owner's list.
	SnapshotSessionIn(ctx context.Context, owner, id, snapID, env string, limits core.Limits, background, hidden bool) (core.SnapshotReport, error)
	// RestoreSession loads snapshot snapID into owner's fresh session id.
	RestoreSession(ctx context.Context, owner, id, snapID, mode string) (core.SnapshotReport, error)
}

// SnapshotDeleter removes a snapshot (the snapshots store's Delete).
type SnapshotDeleter interface {
	Delete(ctx context.Context, owner, id string) error
}

// localSnaps is what the local backend needs for snapshot_session and
// fork_session (LocalOptions.Snapshots): the worker's snapshot side and
// the store the fork's passing snapshot is deleted from.
type localSnaps struct {
	snap  Snapshotter
	store SnapshotDeleter
	mu    sync.Mutex
	open  map[string]core.Request // the open request of each session opened here, by id
}

// remember keeps the open request of session id, for a fork to open its
// copy the same way (limits, mount, environment, network policy).
func (l *local) remember(id string, req core.Request) {
	if l.snaps == nil {
		return
	}
	l.snaps.mu.Lock()
	defer l.snaps.mu.Unlock()
	if l.snaps.open == nil {
		l.snaps.open = map[string]core.Request{}
	}
	l.snaps.open[id] = req
}

// forgetOpen drops what remember kept of session id.
func (l *local) forgetOpen(id string) {
	if l.snaps == nil {
		return
	}
	l.snaps.mu.Lock()
	defer l.snaps.mu.Unlock()
	delete(l.snaps.open, id)
}

// openRequest returns the open request of owner's session id.
func (l *local) openRequest(owner, id string) (core.Request, error) {
	if l.snaps == nil {
		return core.Request{}, core.Errorf("mcpserver", core.ErrUnavailable, "session snapshots are not available in this MCP server")
	}
	l.snaps.mu.Lock()
	defer l.snaps.mu.Unlock()
	req, ok := l.snaps.open[id]
	if !ok || req.Owner != owner {
		return core.Request{}, core.Errorf("mcpserver", core.ErrNotFound, "session "+id+" was not opened by this MCP server")
	}
	return req, nil
}

// canSnapshot implements snapshotCapable.
func (l *local) canSnapshot() bool { return l.snaps != nil }

// newSnapshotID returns a fresh snapshot id.
func newSnapshotID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "snap-" + hex.EncodeToString(b)
}

// Snapshot implements SnapshotBackend on the worker holding the session.
func (l *local) Snapshot(ctx context.Context, owner, id string) (wire.SnapshotCreated, error) {
	req, err := l.openRequest(owner, id)
	if err != nil {
		return wire.SnapshotCreated{}, err
	}
	snapID := newSnapshotID()
	rep, err := l.snaps.snap.SnapshotSessionIn(ctx, owner, id, snapID, req.Environment, req.Limits, req.Background, false)
	if err != nil {
		return wire.SnapshotCreated{}, fmt.Errorf("snapshot of session %s: %w", id, err)
	}
	return wire.SnapshotCreated{SnapshotID: snapID, Bytes: rep.Bytes, Skipped: skipsOf(rep.Skipped)}, nil
}

// Fork implements SnapshotBackend: a passing hidden snapshot of session id
// restored into a new session opened as id was; the snapshot is deleted
// afterwards and a failed restore closes the new session.
func (l *local) Fork(ctx context.Context, owner, id string) (wire.Session, error) {
	req, err := l.openRequest(owner, id)
	if err != nil {
		return wire.Session{}, err
	}
	snapID := newSnapshotID()
	if _, err := l.snaps.snap.SnapshotSessionIn(ctx, owner, id, snapID, req.Environment, req.Limits, req.Background, true); err != nil {
		return wire.Session{}, fmt.Errorf("fork of session %s: %w", id, err)
	}
	defer func() { _ = l.snaps.store.Delete(context.WithoutCancel(ctx), owner, snapID) }()
	nid, err := l.openWith(ctx, req)
	if err != nil {
		return wire.Session{}, fmt.Errorf("fork of session %s: %w", id, err)
	}
	rep, err := l.snaps.snap.RestoreSession(ctx, owner, nid, snapID, wire.RestoreNamespace)
	if err != nil {
		_ = l.CloseSession(context.WithoutCancel(ctx), owner, nid)
		return wire.Session{}, fmt.Errorf("fork of session %s: restore: %w", id, err)
	}
	names := rep.Names
	if names == nil {
		names = []string{}
	}
	return wire.Session{ID: nid, Environment: req.Environment, Background: req.Background,
		Restored: &wire.SessionRestored{Restore: wire.RestoreNamespace, Names: names, Skipped: skipsOf(rep.Skipped)}}, nil
}

// openWith opens a session with open request req and remembers it.
func (l *local) openWith(ctx context.Context, req core.Request) (string, error) {
	res, err := l.exec.Exec(ctx, req)
	if err != nil {
		return "", fmt.Errorf("mcpserver: open session: %w", err)
	}
	if res.Status == core.StatusRejected {
		return "", fmt.Errorf("mcpserver: open session: %w: %s", core.ErrInvalid, res.Message)
	}
	if res.SessionID == "" {
		return "", errors.New("mcpserver: open session: the sandbox returned no session id")
	}
	l.remember(res.SessionID, req)
	return res.SessionID, nil
}

// skipsOf is a snapshot report's skipped names as the API answers them.
func skipsOf(in []core.SnapshotSkip) []wire.SnapshotSkip {
	out := make([]wire.SnapshotSkip, 0, len(in))
	for _, k := range in {
		out = append(out, wire.SnapshotSkip{Name: k.Name, Type: k.Type, Reason: k.Reason})
	}
	return out
}
