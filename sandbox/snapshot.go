package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// snapChunk is the most one snapread or snapwrite carries.
const snapChunk = 4 << 20

// snapInline is the largest snapshot (both parts) the controller sends in
// its done frame (featureSnapInline) instead of in snapread chunks.
const snapInline = 1 << 20

// featureSnapInline: the controller can send a small snapshot's parts in
// the snapshot op's done frame (ctlRequest.InlineMax).
const featureSnapInline = "snap_inline"

// snapOpTimeout bounds the snapshot and restore ops (dill on a large
// namespace); the controller's own bound in the kernel is 300 s.
const snapOpTimeout = 330 * time.Second

// SnapshotSession saves session id of owner: the controller has the
// session's kernel save its namespace (with dill, in the kernel) and packs
// /work, within maxBytes together; the parts are then read in chunks into
// sink and checked against the controller's digests. The report names
// what was saved and what was skipped (open files, generators, ...).
func (e *Engine) SnapshotSession(ctx context.Context, owner, id string, maxBytes int64, sink core.SnapshotSink) (core.SnapshotReport, error) {
	ss, err := e.sessions.get(owner, id)
	if err != nil {
		return core.SnapshotReport{}, err
	}
	ss.snapMu.Lock()
	defer ss.snapMu.Unlock()
	ss.inUse.Add(1)
	defer ss.inUse.Add(-1)
	e.sessions.touch(ss)
	req := ctlRequest{Op: "snapshot", MaxBytes: maxBytes}
	if ss.box.has(featureSnapInline) {
		req.InlineMax = snapInline
	}
	f, err := e.snapOp(ctx, ss, req, snapOpTimeout)
	if err != nil {
		return core.SnapshotReport{}, err
	}
	rep := core.SnapshotReport{Names: f.Names, Modules: f.Modules, Skipped: f.Skipped, Entries: f.SnapEntries}
	if rep.Skipped == nil {
		rep.Skipped = []core.SnapshotSkip{}
	}
	if f.Inline != nil { // the controller removed its files
		return inlineSnapshot(f, rep, sink)
	}
	defer func() { _, _ = e.snapOp(context.WithoutCancel(ctx), ss, ctlRequest{Op: "snapclear"}, time.Minute) }()
	for _, part := range core.SnapshotParts {
		want, ok := f.Parts[part]
		if !ok {
			return core.SnapshotReport{}, core.Errorf("sandbox.snapshot", core.ErrInternal, "the controller reported no "+part+" part")
		}
		h := sha256.New()
		var off int64
		for off < want.Size || (off == 0 && want.Size == 0) {
			c, err := e.snapOp(ctx, ss, ctlRequest{Op: "snapread", Part: part, Offset: off, Length: snapChunk}, time.Minute)
			if err != nil {
				return core.SnapshotReport{}, err
			}
			data, err := c.bytesData()
			if err != nil || c.Size != want.Size || (len(data) == 0 && off < want.Size) {
				return core.SnapshotReport{}, core.Errorf("sandbox.snapshot", core.ErrInternal, fmt.Sprintf("bad %s chunk at %d from the controller", part, off))
			}
			h.Write(data)
			off += int64(len(data))
			if err := sink(part, want.Size, data); err != nil {
				return core.SnapshotReport{}, err
			}
			if want.Size == 0 {
				break
			}
		}
		if hex.EncodeToString(h.Sum(nil)) != want.SHA256 {
			return core.SnapshotReport{}, core.Errorf("sandbox.snapshot", core.ErrInternal, "the "+part+" part changed while it was read")
		}
		rep.Bytes += want.Size
	}
	return rep, nil
}

// inlineSnapshot hands the parts a snapshot's done frame carried (a
// small snapshot: one round trip, no snapread or snapclear) to sink,
// checked against the frame's sizes and digests.
func inlineSnapshot(f ctlFrame, rep core.SnapshotReport, sink core.SnapshotSink) (core.SnapshotReport, error) {
	for _, part := range core.SnapshotParts {
		want, ok := f.Parts[part]
		data, got := f.Inline[part]
		if !ok || !got || int64(len(data)) != want.Size || len(data) > snapInline {
			return core.SnapshotReport{}, core.Errorf("sandbox.snapshot", core.ErrInternal, "bad inline "+part+" part from the controller")
		}
		if h := sha256.Sum256(data); hex.EncodeToString(h[:]) != want.SHA256 {
			return core.SnapshotReport{}, core.Errorf("sandbox.snapshot", core.ErrInternal, "the inline "+part+" part does not match its digest")
		}
		if err := sink(part, want.Size, data); err != nil {
			return core.SnapshotReport{}, err
		}
		rep.Bytes += want.Size
	}
	return rep, nil
}

// RestoreSession loads a snapshot into session id of owner: src writes
// each part into the container, then the controller unpacks the work
// folder into the emptied /work and, with mode core.RestoreNamespace, has
// the kernel load the namespace ("files" restores /work only).
func (e *Engine) RestoreSession(ctx context.Context, owner, id, mode string, maxBytes int64, src core.SnapshotSource) (core.SnapshotReport, error) {
	ss, err := e.sessions.get(owner, id)
	if err != nil {
		return core.SnapshotReport{}, err
	}
	ss.snapMu.Lock()
	defer ss.snapMu.Unlock()
	ss.inUse.Add(1)
	defer ss.inUse.Add(-1)
	e.sessions.touch(ss)
	for _, part := range core.SnapshotParts {
		var off int64
		write := func(chunk []byte) error {
			if len(chunk) > snapChunk {
				return core.Errorf("sandbox.restore", core.ErrInternal, "snapshot chunk over 4 MiB")
			}
			f, err := e.snapOp(ctx, ss, ctlRequest{Op: "snapwrite", Part: part, Offset: off, Data: chunk}, time.Minute)
			if err != nil {
				return err
			}
			off = f.Size
			return nil
		}
		if err := write(nil); err != nil { // creates the part, empty
			return core.SnapshotReport{}, err
		}
		if err := src(part, write); err != nil {
			return core.SnapshotReport{}, err
		}
	}
	f, err := e.snapOp(ctx, ss, ctlRequest{Op: "restore", Mode: mode, MaxBytes: maxBytes}, snapOpTimeout)
	if err != nil {
		return core.SnapshotReport{}, err
	}
	rep := core.SnapshotReport{Names: f.Names, Modules: f.Modules, Skipped: f.Skipped, Entries: f.SnapEntries}
	if rep.Skipped == nil {
		rep.Skipped = []core.SnapshotSkip{}
	}
	return rep, nil
}

// snapOp runs one snapshot request on the session's container; a refusal
// is ErrInvalid with the controller's reason, a container that stopped
// answering ends the session.
func (e *Engine) snapOp(ctx context.Context, ss *session, req ctlRequest, bound time.Duration) (ctlFrame, error) {
	out, err := ss.box.call(ctx, e, req, callOpts{timeout: bound, session: true, budget: snapChunk/3*4 + smallFrame, quiet: true})
	if err != nil {
		return ctlFrame{}, err
	}
	switch {
	case out.abandoned:
		return ctlFrame{}, fmt.Errorf("sandbox: %s abandoned: %w", req.Op, context.Cause(ctx))
	case ss.box.dead.Load() || !out.gotDone:
		e.sessions.end(ss)
		return ctlFrame{}, fmt.Errorf("sandbox: session %s ended during %s: %w", ss.info.ID, req.Op, core.ErrSessionNotFound)
	case out.done.Fail != "":
		return ctlFrame{}, core.Errorf("sandbox."+req.Op, snapFailCode(out.done.Fail), snapFailMessage(out.done.Fail))
	}
	return out.done, nil
}

// snapFailCode classifies a snapshot op's failure as the controller words
// it: past the snapshot's byte bound or /work's entry cap (the namespace's
// TooLarge, or the pack of /work) it is core.ErrTooLarge, anything else
// bad input.
func snapFailCode(fail string) core.Code {
	if strings.Contains(fail, "byte bound") || strings.Contains(fail, "/work has more than") || outOfRoom(fail) {
		return core.ErrTooLarge
	}
	return core.ErrInvalid
}

// outOfRoom reports whether the controller failed writing the snapshot
// into the sandbox's /tmp: over the session's file size limit (EFBIG) or
// its tmpfs full (ENOSPC).
func outOfRoom(fail string) bool {
	return strings.Contains(fail, "[Errno 27]") || strings.Contains(fail, "[Errno 28]")
}

// snapFailMessage is the caller's reading of a snapshot op's failure: one
// that ran out of room in the sandbox says which limits to raise.
func snapFailMessage(fail string) string {
	if outOfRoom(fail) {
		return fail + " (a snapshot is written in the sandbox's /tmp first: open the session with larger " +
			"file_size_bytes and tmpfs_bytes limits to save a larger namespace)"
	}
	return fail
}
