package sandbox

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// SessionInfo describes a live session.
type SessionInfo struct {
	ID        string    `json:"id"`
	Owner     string    `json:"owner"`
	Created   time.Time `json:"created"`
	LastUsed  time.Time `json:"last_used"`
	ExpiresAt time.Time `json:"expires_at"`
	Container string    `json:"container"`
}

// session is one container serving one caller's successive calls.
type session struct {
	info  SessionInfo
	box   *box
	check checked // the limits, mount and env the container was made with
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
	req.Language = core.Python
	req.Code = ""
	c, rej, err := e.check(ctx, req)
	if err != nil || rej != nil {
		return SessionInfo{}, rej, err
	}
	if !c.runner {
		r := core.Result{Status: core.StatusRejected, ExitCode: -1, Message: fmt.Sprintf("image %s has no runner; sessions need the python image", c.image)}
		return SessionInfo{}, &r, nil
	}
	s := e.sessions
	slot, err := s.admit(c.Owner)
	if err != nil {
		return SessionInfo{}, nil, err
	}
	b := e.takeWarm(c)
	if b == nil {
		b, err = e.startBox(ctx, c.image, c.limits, c.mount, c.Env, "session", c.JobID, c.Owner, false)
		if err != nil {
			s.release(slot)
			return SessionInfo{}, nil, err
		}
	}
	now := time.Now()
	ss := &session{box: b, check: c, info: SessionInfo{ID: "s-" + newID(), Owner: c.Owner, Created: now,
		LastUsed: now, ExpiresAt: now.Add(e.cfg.SessionMaxLife), Container: short(b.id)}}
	s.mu.Lock()
	delete(s.live, slot)
	if s.closed {
		s.mu.Unlock()
		b.kill(e)
		e.destroy(b.id, &b.hj)
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
	e.sessions.mu.Lock()
	defer e.sessions.mu.Unlock()
	return ss.info, nil
}

// Sessions lists live sessions of owner (all when owner is empty).
func (e *Engine) Sessions(owner string) []SessionInfo {
	s := e.sessions
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SessionInfo
	for _, ss := range s.live {
		if ss.box != nil && (owner == "" || ss.info.Owner == owner) {
			out = append(out, ss.info)
		}
	}
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
	ss.box.kill(s.e)
	s.e.destroy(ss.box.id, &ss.box.hj)
}

// touch records that the session was used.
func (s *sessions) touch(ss *session) {
	s.mu.Lock()
	ss.info.LastUsed = time.Now()
	s.mu.Unlock()
}

// SessionExec runs code in a session: Python state and the work folder
// persist between calls. A timeout interrupts the code; if the interpreter
// does not recover the session is destroyed and Result.SessionEnded says so.
func (e *Engine) SessionExec(ctx context.Context, req core.Request) (core.Result, error) {
	start := time.Now()
	ss, err := e.sessions.get(req.Owner, req.SessionID)
	if err != nil {
		return core.Result{}, err
	}
	// The container's limits were fixed when the session opened; per call
	// only the timeout and output cap may change.
	req.Mount, req.Env, req.Image = "", nil, ss.check.image
	call := req.Limits
	req.Limits = ss.check.limits
	req.Limits.Timeout, req.Limits.OutputBytes = call.Timeout, call.OutputBytes
	c, rej, err := e.check(ctx, req)
	if err != nil || rej != nil {
		return deref(rej), err
	}
	e.sessions.touch(ss)
	res, err := e.runOn(ctx, ss.box, c, true)
	if res.SessionEnded || ss.box.dead.Load() {
		res.SessionEnded = true
		e.sessions.end(ss)
	}
	e.sessions.touch(ss)
	res.DurationMS = time.Since(start).Milliseconds()
	return res, err
}

// PutFile writes data to path (relative to /work) in a session.
func (e *Engine) PutFile(ctx context.Context, owner, id, path string, data []byte) error {
	if len(data) > e.cfg.MaxFileBytes {
		return fmt.Errorf("sandbox: file is %d bytes, over the %d-byte limit: %w", len(data), e.cfg.MaxFileBytes, core.ErrTooLarge)
	}
	if err := checkWorkPath(path); err != nil {
		return err
	}
	_, err := e.fileOp(ctx, owner, id, runnerRequest{Op: "put", Path: path, Data: data})
	return err
}

// GetFile reads path (relative to /work) from a session, never following a
// symlink and never more than the file size limit.
func (e *Engine) GetFile(ctx context.Context, owner, id, path string) ([]byte, error) {
	if err := checkWorkPath(path); err != nil {
		return nil, err
	}
	r, err := e.fileOp(ctx, owner, id, runnerRequest{Op: "get", Path: path, MaxBytes: e.cfg.MaxFileBytes})
	return r.Data, err
}

func (e *Engine) fileOp(ctx context.Context, owner, id string, req runnerRequest) (runnerReply, error) {
	ss, err := e.sessions.get(owner, id)
	if err != nil {
		return runnerReply{}, err
	}
	e.sessions.touch(ss)
	out, err := ss.box.call(ctx, e, req, time.Now().Add(30*time.Second), 0, true)
	if err != nil {
		return runnerReply{}, err
	}
	if out.ended || ss.box.dead.Load() {
		e.sessions.end(ss)
		return runnerReply{}, fmt.Errorf("sandbox: session %s ended during a file operation: %w", id, core.ErrSessionNotFound)
	}
	if out.timedOut || out.flooded || out.reply.Status == "interrupted" {
		return runnerReply{}, fmt.Errorf("sandbox: %s %s did not finish (is it a pipe or device?): %w", req.Op, req.Path, core.ErrInvalid)
	}
	if out.reply.Error != "" {
		return runnerReply{}, fmt.Errorf("sandbox: %s %s: %w: %s", req.Op, req.Path, core.ErrInvalid, out.reply.Error)
	}
	return out.reply, nil
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
			ss.box.kill(s.e)
			ss.box.mu.Unlock()
			s.e.destroy(ss.box.id, &ss.box.hj)
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
