package batch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/wire"
)

// maxTransient bounds how often one item is retried after platform
// failures that may pass (busy, unavailable: a Redis restart, a worker
// gone) before its line records the failure.
const maxTransient = 12

// errTransient marks an item attempt that did not reach an outcome.
type errTransient struct{ err error }

func (e errTransient) Error() string { return e.err.Error() }
func (e errTransient) Unwrap() error { return e.err }

// runItem runs one item to a result line, retrying transient platform
// failures with backoff (same idempotency key, so a job the queue already
// ran is not run again); ok is false when ctx ended first. A try whose job
// passed its deadline in the queue (its worker died and the job was
// reclaimed too late) is final under its key (the queue answers the same
// deadline to every retry of it), so the next try gets a key of its own:
// the expired job no longer runs anywhere.
func (m *Manager) runItem(ctx context.Context, owner, id string, it Item, lease *slotLease) (*wire.BatchLine, bool) {
	expired := 0
	for try := 1; ; try++ {
		line, err := m.tryItem(ctx, owner, id, it, lease, expired)
		if ctx.Err() != nil {
			return nil, false
		}
		var te errTransient
		if err == nil || !errors.As(err, &te) {
			return line, true
		}
		if core.CodeOf(err) == core.ErrDeadline {
			expired++
		}
		if try >= maxTransient {
			if line == nil {
				line = &wire.BatchLine{Status: string(dispatcher.StatusUnavailable), Error: &wire.BatchError{Code: string(core.CodeOf(err)), Message: err.Error()}}
			}
			return m.stamp(line, it, m.cfg.Now()), true
		}
		m.cfg.Logger.Warn("batch: item retried", "batch", id, "custom_id", it.CustomID, "try", try, "err", err)
		lease.drop() // no slot is held while backing off
		select {
		case <-ctx.Done():
			return nil, false
		case <-time.After(min(time.Duration(try)*500*time.Millisecond, 5*time.Second)):
		}
	}
}

// tryItem makes one attempt while holding one of the owner's slots (the
// runner goroutine's lease, kept across its items); expired counts the
// earlier tries whose job expired in the queue (see runItem).
func (m *Manager) tryItem(ctx context.Context, owner, id string, it Item, lease *slotLease, expired int) (*wire.BatchLine, error) {
	if err := lease.ensure(ctx); err != nil {
		return nil, err
	}
	start := m.cfg.Now()
	var line *wire.BatchLine
	switch {
	case it.Call != nil:
		call := *it.Call
		call.Owner = owner
		call.Lane = core.LaneBatch
		call.IdempotencyKey = fmt.Sprintf("%s/%s/%d", id, it.CustomID, it.Attempt)
		if expired > 0 {
			call.IdempotencyKey += fmt.Sprintf("/expired-%d", expired)
		}
		if call.ID == "" {
			call.ID = fmt.Sprintf("call_%s_%d_%d", id, it.Index, it.Attempt)
		}
		if call.Caller == "" {
			call.Caller = "batch"
		}
		mode, note, err := m.inputs(ctx, owner, id, it, &call)
		if err != nil {
			if errors.Is(err, errArchiveGone) {
				return m.stamp(&wire.BatchLine{Status: "failed", Error: &wire.BatchError{Code: "archive_gone",
					Message: fmt.Sprintf("uploaded archive %d of the batch is no longer stored (archives are kept for the completion window plus %s)", it.Archive, m.cfg.ArchiveRetention)}}, it, start), nil
			}
			return nil, errTransient{err}
		}
		res := m.disp.Run(ctx, call)
		line = m.toolLine(owner, it, res)
		line.InputMode, line.InputNote = mode, note
		if res.Status == dispatcher.StatusBusy || res.Status == dispatcher.StatusUnavailable {
			err := res.Err
			if err == nil {
				err = fmt.Errorf("%s: %s", res.Status, res.Content)
			}
			return m.stamp(line, it, start), errTransient{err}
		}
	case it.Run != nil:
		line = m.runLine(ctx, owner, it)
	default:
		line = &wire.BatchLine{Status: "rejected", Error: &wire.BatchError{Code: "invalid", Message: "the item has neither a tool call nor a run"}}
	}
	return m.stamp(line, it, start), nil
}

// stamp sets the line's item fields, duration and completion time.
func (m *Manager) stamp(line *wire.BatchLine, it Item, start time.Time) *wire.BatchLine {
	line.CustomID, line.Attempt = it.CustomID, it.Attempt
	if line.Code == "" {
		line.Code = bound(itemCode(it), m.cfg.OutputBytes)
	}
	if line.DurationMS == 0 {
		line.DurationMS = m.cfg.Now().Sub(start).Milliseconds()
	}
	line.CompletedAt = m.cfg.Now().Unix()
	return line
}

// inputs gives the call its files: an uploaded archive from the store, or
// the item folder packed into a tar (the folder is mounted instead when it
// cannot be packed, or with Config.MountInputs). It answers the input mode
// and, for a fallback, why.
func (m *Manager) inputs(ctx context.Context, owner, id string, it Item, call *dispatcher.Call) (mode, note string, err error) {
	switch {
	case it.Archive > 0:
		data, err := m.getArchive(ctx, owner, id, it.Archive)
		if err != nil {
			return "", "", err
		}
		call.Archive, call.Mount = data, ""
		return InputArchive, "", nil
	case call.Mount == "":
		return "", "", nil
	case m.cfg.MountInputs:
		return InputMount, "", nil
	}
	data, err := packFolder(call.Mount, core.MaxArchiveBytes, m.cfg.PackMaxEntries)
	if reason, ok := isNoPack(err); ok {
		return InputMount, reason + "; copied from the folder into the sandbox by the worker instead", nil
	}
	if err != nil {
		m.cfg.Logger.Warn("batch: pack item folder", "batch", id, "custom_id", it.CustomID, "err", err)
		return InputMount, "the item folder could not be packed; copied from the folder into the sandbox by the worker instead", nil
	}
	call.Archive, call.Mount = data, ""
	return InputArchive, "", nil
}

// runLine runs an agent for a run item and waits for its end.
func (m *Manager) runLine(ctx context.Context, owner string, it Item) *wire.BatchLine {
	if m.runs == nil {
		return &wire.BatchLine{Status: "rejected", Error: &wire.BatchError{Code: string(core.ErrNoModel), Message: "agent runs are not available on this server"}}
	}
	req := *it.Run
	req.Owner = owner
	start := m.cfg.Now()
	v, err := m.runs.Start(req)
	if err != nil {
		return &wire.BatchLine{Status: "failed", Error: &wire.BatchError{Code: string(core.CodeOf(err)), Message: err.Error()}}
	}
	for !runEnded(v.Status) {
		select {
		case <-ctx.Done():
			// A cancel, the completion window or a shutdown stops the item,
			// and so its run: left going, it would run on with nobody
			// reading its end (an item left pending starts a new run).
			if err := m.runs.Cancel(owner, v.ID); err != nil && core.CodeOf(err) != core.ErrNotFound {
				m.cfg.Logger.Warn("batch: cancel the run of an item", "run", v.ID, "custom_id", it.CustomID, "err", err)
			}
			return &wire.BatchLine{Status: "cancelled", RunID: v.ID, Error: &wire.BatchError{Code: "cancelled", Message: ctx.Err().Error()}}
		case <-time.After(200 * time.Millisecond):
		}
		nv, err := m.runs.Get(owner, v.ID)
		if core.CodeOf(err) == core.ErrNotFound {
			return &wire.BatchLine{Status: "failed", RunID: v.ID, Error: &wire.BatchError{Code: string(core.ErrNotFound),
				Message: fmt.Sprintf("run %s of the item is no longer stored", v.ID)}}
		}
		if err == nil {
			v = nv
		}
	}
	l := &wire.BatchLine{Status: string(v.Status), RunID: v.ID, FinalAnswer: v.FinalAnswer, DurationMS: m.cfg.Now().Sub(start).Milliseconds()}
	if v.Error != "" {
		l.Error = &wire.BatchError{Code: string(v.Status), Message: v.Error}
	}
	return l
}

func runEnded(s wire.RunStatus) bool {
	return s != wire.RunRunning && s != wire.RunWaitingApproval
}
