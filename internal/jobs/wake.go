package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/queue"
)

// wakeLockTTL bounds how long one caller may hold a session's wake lock
// (the wake job's own bound).
const wakeLockTTL = snapshotJobTimeout

// SetResumes lets the client wake sessions whose container is gone
// (issue 30): a session call that finds its session lost (its worker
// stopped or died) or not found on its worker (hibernated) restores the
// session from its resume record into a fresh container on any worker,
// under the same id, and runs again there; its result says Resumed. Call
// before the client is used.
func (c *Client) SetResumes(r *snapshots.Resumes) { c.resumes = r }

// wakes reports whether op on a gone session wakes it: calls, files and
// snapshots do; an info, an interrupt or an input does not (there is
// nothing running to ask or stop).
func wakes(op core.Op) bool {
	switch op {
	case "", core.OpExec, core.OpFilePut, core.OpFileGet, core.OpFileList, core.OpSessionRestart,
		core.OpSessionIntrospect, core.OpSessionSnapshot:
		return true
	}
	return false
}

// goneSession reports whether err says a session has no container.
func goneSession(err error) bool {
	return errors.Is(err, core.ErrSessionLost) || errors.Is(err, core.ErrNotFound)
}

// resumeExec runs req; when its session turns out to be gone before req
// reached it (not found on its worker, or no live worker held it when req
// was submitted) and has a resume record, it wakes the session and runs
// req again. A call lost while it waited or ran answers session_lost as
// before (it may have run); the next call wakes the session.
func (c *Client) resumeExec(ctx context.Context, req core.Request) (core.Result, error) {
	res, err := c.exec(ctx, req)
	if err == nil || c.resumes == nil || req.SessionID == "" || !goneSession(err) {
		return res, err
	}
	if req.Op == core.OpSessionClose { // a hibernated session closes by losing its snapshot
		if _, gerr := c.resumes.Get(ctx, req.Owner, req.SessionID); gerr == nil {
			c.resumes.Drop(context.WithoutCancel(ctx), req.Owner, req.SessionID)
			return core.Result{Status: core.StatusOK}, nil
		}
		return res, err
	}
	if !wakes(req.Op) {
		return res, err
	}
	if !errors.Is(err, core.ErrNotFound) && !errors.Is(err, queue.ErrNotStarted) {
		// Lost while it waited or ran (its worker died): it may have run,
		// so it is not run again; the session's next call wakes it.
		return res, err
	}
	start := time.Now()
	rep, woke, werr := c.wake(ctx, req.Owner, req.SessionID)
	switch {
	case errors.Is(werr, core.ErrNotFound):
		return res, err // nothing to resume from: the session is lost
	case werr != nil:
		return core.Result{}, werr
	}
	res, err = c.exec(ctx, req)
	if err == nil && woke {
		res.Resumed, res.WakeMS = true, time.Since(start).Milliseconds()
		res.ResumeSkipped = rep.Skipped
	}
	return res, err
}

// wake restores owner's session id from its resume record into a fresh
// container on some worker, under the session's wake lock. woke is false
// when another caller woke it meanwhile (then there is nothing to
// report); an error carrying core.ErrNotFound means there is no record.
func (c *Client) wake(ctx context.Context, owner, id string) (core.SnapshotReport, bool, error) {
	r, err := c.resumes.Get(ctx, owner, id)
	if err != nil {
		return core.SnapshotReport{}, false, err
	}
	for {
		ok, err := c.resumes.Lock(ctx, owner, id, wakeLockTTL)
		if err != nil {
			return core.SnapshotReport{}, false, err
		}
		if ok {
			break
		}
		// Another caller is waking it: wait for it, then run the call.
		for c.resumes.Locked(ctx, owner, id) {
			select {
			case <-ctx.Done():
				return core.SnapshotReport{}, false, fmt.Errorf("jobs: waiting for session %s to wake: %w", id, context.Cause(ctx))
			case <-time.After(100 * time.Millisecond):
			}
		}
		return core.SnapshotReport{}, false, nil
	}
	defer c.resumes.Unlock(context.WithoutCancel(ctx), owner, id)
	// A caller that woke it just before this one took the lock: the
	// session answers again, so there is nothing to wake.
	if _, err := c.exec(ctx, core.Request{Op: core.OpSessionInfo, Owner: owner, SessionID: id}); err == nil {
		return core.SnapshotReport{}, false, nil
	}
	if r, err = c.resumes.Get(ctx, owner, id); err != nil {
		return core.SnapshotReport{}, false, err
	}
	res, err := c.exec(ctx, core.Request{Op: core.OpSessionOpen, Owner: owner, SessionID: id, SnapshotID: r.Snapshot,
		Limits: core.Limits{Timeout: snapshotJobTimeout}})
	if err != nil {
		return core.SnapshotReport{}, false, fmt.Errorf("jobs: wake session %s: %w", id, err)
	}
	if err := rejected(res); err != nil {
		return core.SnapshotReport{}, false, fmt.Errorf("jobs: wake session %s: %w", id, err)
	}
	if res.Snapshot == nil {
		return core.SnapshotReport{}, true, nil
	}
	return *res.Snapshot, true, nil
}
