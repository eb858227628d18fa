package sandbox

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// SessionInfo describes a live session.
type SessionInfo = core.SessionInfo

// session is one container serving one caller's successive calls.
type session struct {
	info  SessionInfo
	box   *box
	check checked           // the limits the container was made with
	env   map[string]string // the session's env, sent with every call
	// input is the session's input folder, scanned when it opened and
	// copied into /workspace with its first exec (held under inputMu until
	// the controller took it).
	inputMu sync.Mutex
	input   *inputScan
	// snapMu keeps one snapshot or restore at a time (they share the
	// controller's snapshot files).
	snapMu sync.Mutex
	// inUse counts the calls, snapshots and restores running on the
	// session: the unbound-session sweep spares a session while it is in use.
	inUse atomic.Int32
}

// sessions tracks live sessions and ends them on idle TTL or maximum life.
type sessions struct {
	e      *Engine
	mu     sync.Mutex
	live   map[string]*session
	closed bool // the engine is closing: no new sessions
}

// shutdown refuses new sessions from now on.
func (s *sessions) shutdown() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

func newSessions(e *Engine) *sessions { return &sessions{e: e, live: map[string]*session{}} }

// OpenSession creates a session bound to one fresh container. The request
// supplies the owner, limits, mount and env; Code and Language are ignored.
func (e *Engine) OpenSession(ctx context.Context, req core.Request) (SessionInfo, *core.Result, error) {
	if len(req.Archive) > 0 {
		return SessionInfo{}, nil, errArchiveInSession
	}
	req.Language = core.Python
	req.Code = ""
	c, rej, err := e.check(ctx, req)
	if err != nil || rej != nil {
		return SessionInfo{}, rej, err
	}
	s := e.sessions
	slot, err := s.admit(c.Owner)
	if err != nil {
		return SessionInfo{}, nil, err
	}
	life := e.cfg.SessionMaxLife + time.Minute
	var b *box
	// A session with a network policy gets a container of its own, with a door.
	if c.egress.Empty() {
		if p := e.poolOf(c); p != nil {
			b = p.takeGeneric(c.Owner, life)
		}
	}
	if b == nil {
		b, err = e.startBox(ctx, c.image, c.limits, "session", c.JobID, c.Owner, false, life, 0, c.egress)
		if err != nil {
			s.release(slot)
			return SessionInfo{}, nil, err
		}
	}
	now := time.Now()
	ss := &session{box: b, check: c, env: c.Env, input: c.input, info: SessionInfo{ID: "s-" + newID(), Owner: c.Owner, Created: now,
		LastUsed: now, ExpiresAt: now.Add(e.cfg.SessionMaxLife), Container: short(b.id)}}
	if req.SessionID != "" { // a wake (issue 30): the session's own id and end
		ss.info.ID = req.SessionID
		if !req.SessionExpires.IsZero() && req.SessionExpires.Before(ss.info.ExpiresAt) {
			ss.info.ExpiresAt = req.SessionExpires
		}
	}
	s.mu.Lock()
	delete(s.live, slot)
	if _, taken := s.live[ss.info.ID]; taken {
		s.mu.Unlock()
		e.retire(b)
		return SessionInfo{}, nil, core.Errorf("sandbox", core.ErrConflict, "session "+ss.info.ID+" is already open here")
	}
	if s.closed {
		s.mu.Unlock()
		e.retire(b)
		return SessionInfo{}, nil, fmt.Errorf("sandbox: engine closing: %w", core.ErrUnavailable)
	}
	s.live[ss.info.ID] = ss
	s.mu.Unlock()
	return ss.info, nil, nil
}

// admit reserves room for one more session of owner and returns the
// reservation's key, or fails with core.ErrBusy.
func (s *sessions) admit(owner string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", fmt.Errorf("sandbox: engine closing: %w", core.ErrUnavailable)
	}
	total, mine := 0, 0
	for _, ss := range s.live {
		total++
		if ss.info.Owner == owner {
			mine++
		}
	}
	if max := s.e.cfg.MaxSessions; max > 0 && total >= max {
		return "", fmt.Errorf("sandbox: %d sessions are open, the server maximum: %w", total, core.ErrBusy)
	}
	if max := s.e.cfg.MaxSessionsPerOwner; max > 0 && mine >= max {
		return "", fmt.Errorf("sandbox: owner %q has %d sessions open, the maximum: %w", owner, mine, core.ErrBusy)
	}
	slot := "\x00reserved:" + newID()
	s.live[slot] = &session{info: SessionInfo{Owner: owner}}
	return slot, nil
}

// release drops a reservation that was not used.
func (s *sessions) release(slot string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.live, slot)
}

// get finds a live session of owner (an empty owner matches any).
func (s *sessions) get(owner, id string) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.live[id]
	if !ok || ss.box == nil || (owner != "" && ss.info.Owner != owner) {
		return nil, fmt.Errorf("sandbox: session %q: %w", id, core.ErrSessionNotFound)
	}
	return ss, nil
}

// Session returns a live session's description.
func (e *Engine) Session(owner, id string) (SessionInfo, error) {
	ss, err := e.sessions.get(owner, id)
	if err != nil {
		return SessionInfo{}, err
	}
	return e.sessions.describe(ss), nil
}

// describe returns a session's info with its current state and resource use.
func (s *sessions) describe(ss *session) SessionInfo {
	s.mu.Lock()
	info := ss.info
	s.mu.Unlock()
	info.State = "idle"
	if ss.box.busy.Load() {
		info.State = "busy"
	}
	if cpu := cgroupCPU(ss.box.id); cpu >= 0 {
		info.CPUMS = cpu * 1000
	}
	if mem := cgroupMemory(ss.box.id); mem >= 0 {
		info.MemBytes = mem
	}
	return info
}

// Sessions lists live sessions of owner (all when owner is empty).
func (e *Engine) Sessions(owner string) []SessionInfo {
	s := e.sessions
	s.mu.Lock()
	defer s.mu.Unlock()
	var mine []*session
	for _, ss := range s.live {
		if ss.box != nil && (owner == "" || ss.info.Owner == owner) {
			mine = append(mine, ss)
		}
	}
	s.mu.Unlock()
	out := make([]SessionInfo, 0, len(mine))
	for _, ss := range mine {
		out = append(out, s.describe(ss))
	}
	s.mu.Lock()
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}

// CloseSession destroys a session's container.
func (e *Engine) CloseSession(owner, id string) error {
	ss, err := e.sessions.get(owner, id)
	if err != nil {
		return err
	}
	e.sessions.end(ss)
	return nil
}

// end removes a session and destroys its container.
func (s *sessions) end(ss *session) {
	s.mu.Lock()
	if cur, ok := s.live[ss.info.ID]; !ok || cur != ss {
		s.mu.Unlock()
		return
	}
	delete(s.live, ss.info.ID)
	s.mu.Unlock()
	s.e.retire(ss.box)
}

// touch records that the session was used.
func (s *sessions) touch(ss *session) {
	s.mu.Lock()
	ss.info.LastUsed = time.Now()
	s.mu.Unlock()
}

// SessionExec runs code in a session: Python state and the work folder
// persist between calls. The controller stops the code at its timeout and
// restarts a kernel that died (Result.KernelRestarted); a caller that goes
// away interrupts its call and the session lives on. Only a controller that
// stops answering ends the session (Result.SessionEnded).
func (e *Engine) SessionExec(ctx context.Context, req core.Request) (core.Result, error) {
	if len(req.Archive) > 0 {
		return core.Result{}, errArchiveInSession
	}
	ss, err := e.sessions.get(req.Owner, req.SessionID)
	if err != nil {
		return core.Result{}, err
	}
	// The container's limits were fixed when the session opened; per call
	// only the timeout and output cap may change. A call that names no
	// timeout gets the session's own.
	req.Mount, req.Image, req.Environment = "", ss.check.image, ss.check.Environment
	call := req.Limits
	req.Limits = ss.check.limits
	req.Limits.OutputBytes = call.OutputBytes
	if call.Timeout > 0 {
		req.Limits.Timeout = call.Timeout
	}
	c, rej, err := e.check(ctx, req)
	if err != nil || rej != nil {
		return deref(rej), err
	}
	env := map[string]string{}
	for k, v := range ss.env {
		env[k] = v
	}
	for k, v := range c.Env {
		env[k] = v
	}
	e.sessions.touch(ss)
	ss.inUse.Add(1)
	res, err := e.sessionRun(ctx, ss, c, env)
	ss.inUse.Add(-1)
	if res.SessionEnded || ss.box.dead.Load() {
		res.SessionEnded = true
		e.sessions.end(ss)
	}
	e.sessions.mu.Lock()
	ss.info.LastUsed = time.Now()
	if err == nil {
		ss.info.ExecCount++
	}
	e.sessions.mu.Unlock()
	return res, err
}

// sessionRun runs c on the session's container. The first exec also
// carries the session's input folder, packed now, which the controller
// unpacks into /workspace before the code runs; a call that fails before
// the controller took it leaves it for the next one.
func (e *Engine) sessionRun(ctx context.Context, ss *session, c checked, env map[string]string) (core.Result, error) {
	ss.inputMu.Lock()
	if ss.input == nil {
		ss.inputMu.Unlock()
		return e.runOn(ctx, ss.box, c, true, env)
	}
	defer ss.inputMu.Unlock()
	c.input, c.entries = ss.input, len(ss.input.entries)
	res, err := e.runOn(ctx, ss.box, c, true, env)
	// A refused copy (a file changed since the scan) or exec left the
	// folder for the next call.
	if err == nil && res.Status != core.StatusRejected {
		ss.input = nil
		res.Warnings = append(res.Warnings, c.input.warnings()...)
	}
	return res, err
}

// InterruptSession raises KeyboardInterrupt in the session's running call.
// It reports whether a call was running; the session keeps its state.
func (e *Engine) InterruptSession(ctx context.Context, owner, id string) (bool, error) {
	ss, err := e.sessions.get(owner, id)
	if err != nil {
		return false, err
	}
	// The controller says whether it had the exec running; a request still
	// queued behind the previous call's cleanup is retried briefly.
	deadline := time.Now().Add(3 * time.Second)
	for ss.box.busy.Load() && time.Now().Before(deadline) {
		hit, err := ss.box.interruptAck(time.Second)
		if err != nil {
			return false, fmt.Errorf("sandbox: interrupt session %s: %w: %w", id, core.ErrUnavailable, err)
		}
		if hit {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("sandbox: interrupt session %s: %w", id, context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}
	return false, nil
}

// RestartSession replaces the session's Python process with a fresh one:
// files are kept, Python state is dropped. A running call ends as
// interrupted (with KernelRestarted) first.
func (e *Engine) RestartSession(ctx context.Context, owner, id string) error {
	ss, err := e.sessions.get(owner, id)
	if err != nil {
		return err
	}
	if ss.box.busy.Load() {
		// Ends the running call at once; its own restart follows below.
		_ = ss.box.send(ctlRequest{ID: newID(), Op: "restart"})
	}
	out, err := ss.box.call(ctx, e, ctlRequest{Op: "restart"}, callOpts{deadline: time.Now().Add(30 * time.Second), session: true})
	if err != nil {
		return err
	}
	if !out.gotDone || out.done.Fail != "" {
		e.sessions.end(ss)
		return fmt.Errorf("sandbox: restart session %s failed (%s): %w", id, out.done.Fail, core.ErrSessionNotFound)
	}
	e.sessions.touch(ss)
	return nil
}

// janitor ends sessions past their idle TTL or maximum life.
func (s *sessions) janitor(stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := time.Now()
		var old []*session
		s.mu.Lock()
		for id, ss := range s.live {
			if ss.box == nil || !(now.After(ss.info.ExpiresAt) || now.Sub(ss.info.LastUsed) > s.e.cfg.SessionIdle) {
				continue
			}
			// A call in progress holds the box lock: that session is busy, not idle.
			if ss.box.mu.TryLock() {
				delete(s.live, id) // get() refuses it from now on
				old = append(old, ss)
			}
		}
		s.mu.Unlock()
		for _, ss := range old {
			s.e.log.Info("session expired", "session", ss.info.ID, "owner", ss.info.Owner)
			ss.box.mu.Unlock()
			s.e.retire(ss.box)
		}
	}
}

// closeAll ends every session.
func (s *sessions) closeAll() {
	s.mu.Lock()
	var all []*session
	for _, ss := range s.live {
		if ss.box != nil {
			all = append(all, ss)
		}
	}
	s.mu.Unlock()
	for _, ss := range all {
		s.end(ss)
	}
}
