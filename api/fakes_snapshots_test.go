package api

import (
	"context"
	"strings"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/snapshots"
)

// snapStore is the snapshots of the fake's state store.
func (f *fakeSessions) snapStore() *snapshots.Store {
	cfg := snapshots.DefaultConfig()
	if f.snapQuota > 0 {
		cfg.Quota = f.snapQuota
	}
	return snapshots.New(f.snapState, cfg, nil)
}

// SnapshotSession stores the session's fake files as the namespace part,
// like a worker's Keeper stores what its sandbox saved.
func (f *fakeSessions) SnapshotSession(ctx context.Context, owner, id, snapID string, limits core.Limits, background, hidden bool) (core.SnapshotReport, error) {
	f.mu.Lock()
	if err := f.check(owner, id); err != nil {
		f.mu.Unlock()
		return core.SnapshotReport{}, err
	}
	env := f.openedIn[id]
	if env == "" {
		env = "python"
	}
	var ns []byte
	for k, v := range f.files {
		if strings.HasPrefix(k, id+"/") {
			ns = append(ns, v...)
		}
	}
	f.mu.Unlock()
	w, err := f.snapStore().Create(ctx, owner, snapID)
	if err != nil {
		return core.SnapshotReport{}, err
	}
	for _, p := range []struct {
		name string
		data []byte
	}{{"ns", ns}, {"work", nil}} {
		if err := w.Write(ctx, p.name, p.data); err != nil {
			w.Abort(ctx)
			return core.SnapshotReport{}, err
		}
	}
	rep := core.SnapshotReport{Names: []string{"x"}, Skipped: []core.SnapshotSkip{{Name: "f", Type: "TextIOWrapper", Reason: "an open file cannot be saved"}}}
	calls, _ := snapshots.NewCallLog(f.snapState).Calls(ctx, owner, id)
	m, err := w.Commit(ctx, snapshots.Meta{Session: id, Report: rep, Environment: env, Limits: limits, Background: background, Calls: calls, Hidden: hidden})
	if err != nil {
		w.Abort(ctx)
		return core.SnapshotReport{}, err
	}
	rep.Bytes = m.Bytes
	return rep, nil
}

// RestoreSession checks the snapshot is the owner's and reports its names.
func (f *fakeSessions) RestoreSession(ctx context.Context, owner, id, snapID, mode string) (core.SnapshotReport, error) {
	m, err := f.snapStore().Get(ctx, owner, snapID)
	if err != nil {
		return core.SnapshotReport{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(owner, id); err != nil {
		return core.SnapshotReport{}, err
	}
	rep := m.Report
	if mode == core.RestoreReplay {
		for i := range m.Calls {
			rep.Replay = append(rep.Replay, core.ReplayedCall{Index: i, Status: core.StatusOK})
		}
	}
	return rep, nil
}
