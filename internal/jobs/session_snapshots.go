package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// snapshotJobTimeout bounds a snapshot or restore job (dill on a large
// namespace, the parts through the state store; a replay runs calls).
const snapshotJobTimeout = 10 * time.Minute

// SnapshotSession saves session id of owner as snapshot snapID on the
// worker holding it (the worker streams it into the state store); limits
// and background are the session's, kept with the snapshot. hidden keeps
// it out of the owner's list (a fork's).
func (c *Client) SnapshotSession(ctx context.Context, owner, id, snapID string, limits core.Limits, background, hidden bool) (core.SnapshotReport, error) {
	meta, err := json.Marshal(limits)
	if err != nil {
		return core.SnapshotReport{}, fmt.Errorf("jobs: encode limits: %w", err)
	}
	req := core.Request{Op: core.OpSessionSnapshot, Owner: owner, SessionID: id, SnapshotID: snapID, Data: meta,
		Background: background, Limits: core.Limits{Timeout: snapshotJobTimeout}}
	if hidden {
		req.Restore = "hidden"
	}
	return c.snapshotOp(ctx, req)
}

// SnapshotSessionIn is SnapshotSession of a session in the environment
// env, which the snapshot keeps (a restore or fork opens in it).
func (c *Client) SnapshotSessionIn(ctx context.Context, owner, id, snapID, env string, limits core.Limits, background, hidden bool) (core.SnapshotReport, error) {
	meta, err := json.Marshal(limits)
	if err != nil {
		return core.SnapshotReport{}, fmt.Errorf("jobs: encode limits: %w", err)
	}
	req := core.Request{Op: core.OpSessionSnapshot, Owner: owner, SessionID: id, SnapshotID: snapID, Data: meta,
		Background: background, Limits: core.Limits{Timeout: snapshotJobTimeout}, Environment: env}
	if hidden {
		req.Restore = "hidden"
	}
	return c.snapshotOp(ctx, req)
}

// RestoreSession loads snapshot snapID into owner's fresh session id, on
// the worker holding it; mode is core.RestoreNamespace or RestoreReplay.
func (c *Client) RestoreSession(ctx context.Context, owner, id, snapID, mode string) (core.SnapshotReport, error) {
	return c.snapshotOp(ctx, core.Request{Op: core.OpSessionRestore, Owner: owner, SessionID: id, SnapshotID: snapID,
		Restore: mode, Limits: core.Limits{Timeout: snapshotJobTimeout}})
}

func (c *Client) snapshotOp(ctx context.Context, req core.Request) (core.SnapshotReport, error) {
	res, err := c.Exec(ctx, req)
	if err != nil {
		return core.SnapshotReport{}, err
	}
	if err := rejected(res); err != nil {
		return core.SnapshotReport{}, err
	}
	if res.Snapshot == nil {
		return core.SnapshotReport{}, core.E("jobs", core.ErrInternal, errors.New(string(req.Op)+" reply without a report"))
	}
	return *res.Snapshot, nil
}
