package api

import (
	"errors"
	"net/http"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/wire"
	"github.com/gin-gonic/gin"
)

// needSessions answers 503 when no session backend is wired.
func (s *Server) needSessions(c *gin.Context) bool {
	if s.deps.Sessions == nil {
		e := newError(core.ErrUnavailable, "sessions are not available on this server")
		abortError(c, e)
		return false
	}
	return true
}

// ownedSession loads the caller's session record or answers 404.
func (s *Server) ownedSession(c *gin.Context, touch bool) (sessionrecords.Record, bool) {
	rec, ok := s.sessions.Get(c.Request.Context(), owner(c), c.Param("id"), touch)
	if !ok {
		abortError(c, newError(core.ErrNotFound, "session not found"))
	}
	return rec, ok
}

// openSession answers POST /v1/sessions with 201 and the session record.
func (s *Server) openSession(c *gin.Context) {
	if !s.needSessions(c) {
		return
	}
	var req wire.CreateSessionRequest
	if err := decodeJSON(c, &req, true); err != nil {
		fail(c, err)
		return
	}
	who := owner(c)
	limits, err := s.calls.Limits(who, req.Limits)
	if err == nil && req.Background {
		if p := s.calls.Policy(who); p == nil || !p.Background {
			err = newError(core.ErrInvalid, `"background": true is not allowed for this API key: its policy in the keys file must say background=true`).
				withDetails(map[string]any{"policy": "background"})
		}
	}
	if err == nil {
		err = s.sessions.CheckBudget(c.Request.Context(), who, limits, s.calls.Budget(who), s.cfg.DefaultLimits)
	}
	if err != nil {
		fail(c, err)
		return
	}
	id, err := s.deps.Sessions.Open(c.Request.Context(), who, limits, req.Background)
	if err != nil {
		s.logPlatform("open session", who, err)
		fail(c, err)
		return
	}
	rec, err := s.sessions.Add(c.Request.Context(), who, id, limits, req.Background)
	if err != nil { // the sandbox has it but no replica could find it: undo
		_ = s.deps.Sessions.Close(c.Request.Context(), who, id)
		s.logPlatform("record session", who, err)
		fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, sessionBody(rec))
}

// closeSession answers DELETE /v1/sessions/{id} with 204.
func (s *Server) closeSession(c *gin.Context) {
	if !s.needSessions(c) {
		return
	}
	rec, ok := s.ownedSession(c, false)
	if !ok {
		return
	}
	err := s.deps.Sessions.Close(c.Request.Context(), rec.Owner, rec.ID)
	if err == nil || errors.Is(err, core.ErrNotFound) {
		s.sessions.Remove(c.Request.Context(), rec.Owner, rec.ID)
	}
	if err != nil {
		s.logPlatform("close session", rec.Owner, err)
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// logPlatform logs a platform error worth an operator's attention.
func (s *Server) logPlatform(op, owner string, err error) {
	if e := toError(nil, err); e.Status >= 500 {
		s.log.Warn("api: "+op+" failed", "owner", owner, "err", err)
	}
}

// sessionBody is a session's record as answered.
func sessionBody(r sessionrecords.Record) wire.Session {
	return wire.Session{ID: r.ID, Created: r.Created, LastUsed: r.LastUsed, ExpiresAt: r.ExpiresAt, Background: r.Background}
}
