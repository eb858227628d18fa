package api

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/wire"
)

// sessionInfoTimeout bounds asking the sandbox about a session for GET;
// past it the answer carries the API's record without the live fields.
const sessionInfoTimeout = 2 * time.Second

// gone reports an error meaning the sandbox no longer has the session.
func gone(err error) bool {
	return errors.Is(err, core.ErrNotFound) || errors.Is(err, core.ErrSessionLost)
}

// liveView is rec as GET answers it: the record and, where the sandbox
// answered, its live state and resource use. ok is false when the sandbox
// says the session is gone; the record is then dropped.
func (s *Server) liveView(ctx context.Context, rec sessionrecords.Record) (wire.Session, bool) {
	v := sessionBody(rec)
	v.CreatedAt, v.LastUsedAt, v.State = rec.Created, rec.LastUsed, wire.SessionUnknown
	v.AgeSeconds = s.cfg.Now().Sub(rec.Created).Seconds()
	if s.deps.Sessions == nil {
		return v, true
	}
	ctx, cancel := context.WithTimeout(ctx, sessionInfoTimeout)
	defer cancel()
	info, err := s.deps.Sessions.SessionInfo(ctx, rec.Owner, rec.ID)
	switch {
	case gone(err):
		s.sessions.Remove(ctx, rec.Owner, rec.ID)
		return v, false
	case err != nil:
		s.logPlatform("session info", rec.Owner, err)
		return v, true
	}
	v.State = info.State
	n, cpu, mem := info.ExecCount, info.CPUMS, info.MemBytes
	v.ExecutionCount, v.CPUMS, v.MemBytes = &n, &cpu, &mem
	return v, true
}

// getSession answers GET /v1/sessions/{id}: the record and live state; 404
// when the sandbox no longer has it.
func (s *Server) getSession(c *gin.Context) {
	rec, ok := s.ownedSession(c, false)
	if !ok {
		return
	}
	v, ok := s.liveView(c.Request.Context(), rec)
	if !ok {
		abortError(c, newError(core.ErrNotFound, "session not found"))
		return
	}
	c.JSON(http.StatusOK, v)
}

// listSessions answers GET /v1/sessions: the caller's sessions, oldest
// first, {"sessions": [...]}.
func (s *Server) listSessions(c *gin.Context) {
	recs := s.sessions.List(c.Request.Context(), owner(c))
	views := make([]wire.Session, len(recs))
	keep := make([]bool, len(recs))
	var wg sync.WaitGroup
	for i, r := range recs {
		wg.Go(func() { views[i], keep[i] = s.liveView(c.Request.Context(), r) })
	}
	wg.Wait()
	out := make([]wire.Session, 0, len(recs))
	for i, v := range views {
		if keep[i] {
			out = append(out, v)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	c.JSON(http.StatusOK, wire.SessionList{Sessions: out})
}

// interruptSession answers POST /v1/sessions/{id}/interrupt with 200
// {"interrupted": true} when a call was running (it ends with
// KeyboardInterrupt; the session keeps its state) or false when idle.
func (s *Server) interruptSession(c *gin.Context) {
	if !s.needSessions(c) {
		return
	}
	rec, ok := s.ownedSession(c, false)
	if !ok {
		return
	}
	hit, err := s.deps.Sessions.InterruptSession(c.Request.Context(), rec.Owner, rec.ID)
	if err != nil {
		s.sessionFailed(c, "interrupt session", rec, err)
		return
	}
	c.JSON(http.StatusOK, wire.Interrupted{Interrupted: hit})
}

// restartSession answers POST /v1/sessions/{id}/restart with 200 and the
// session: a fresh Python process, the same files.
func (s *Server) restartSession(c *gin.Context) {
	if !s.needSessions(c) {
		return
	}
	rec, ok := s.ownedSession(c, true)
	if !ok {
		return
	}
	if err := s.deps.Sessions.RestartSession(c.Request.Context(), rec.Owner, rec.ID); err != nil {
		s.sessionFailed(c, "restart session", rec, err)
		return
	}
	v, ok := s.liveView(c.Request.Context(), rec)
	if !ok {
		abortError(c, newError(core.ErrNotFound, "session not found"))
		return
	}
	c.JSON(http.StatusOK, v)
}

// sessionFailed answers a failed session operation; a session the sandbox
// no longer has is dropped and answers 404.
func (s *Server) sessionFailed(c *gin.Context, op string, rec sessionrecords.Record, err error) {
	if gone(err) {
		s.sessions.Remove(c.Request.Context(), rec.Owner, rec.ID)
		abortError(c, newError(core.ErrNotFound, "session not found"))
		return
	}
	s.logPlatform(op, rec.Owner, err)
	fail(c, err)
}
