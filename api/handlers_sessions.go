package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/wire"
)

// needSessions answers 503 when no session backend is wired.
func (s *Server) needSessions(c *gin.Context) bool {
	if s.deps.Sessions == nil {
		abortError(c, newError(core.ErrUnavailable, "sessions are not available on this server"))
		return false
	}
	return true
}

// ownedSession loads the caller's session record or answers 404; with
// backend it first answers 503 when no session backend is wired.
func (s *Server) ownedSession(c *gin.Context, touch, backend bool) (sessionrecords.Record, bool) {
	if backend && !s.needSessions(c) {
		return sessionrecords.Record{}, false
	}
	rec, ok := s.records.Get(c.Request.Context(), owner(c), c.Param("id"), touch)
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
	limits, err := s.calls.SessionLimits(who, req.Limits)
	if err == nil && req.Background {
		if p := s.calls.Policy(who); p == nil || !p.Background {
			err = newError(core.ErrInvalid, `"background": true is not allowed for this API key: its policy in the keys file must say background=true`).
				withDetails(map[string]any{"policy": "background"})
		}
	}
	var env environments.Target
	if err == nil && req.Environment != "" {
		env, err = s.resolveEnvironment(c.Request.Context(), who, req.Environment)
	}
	var rec wire.Session
	if err == nil && req.Snapshot != "" {
		s.openFromSnapshot(c, &req)
		return
	}
	if err == nil && req.Restore != "" {
		err = newError(core.ErrInvalid, `"restore" needs "snapshot": the snapshot to open the session from`)
	}
	if err == nil {
		rec, err = s.sessions.OpenIn(c.Request.Context(), who, env, limits, req.Background, s.calls.Budget(who), s.cfg.DefaultLimits)
		rec.TimeoutSeconds = s.sessionTimeout(limits)
	}
	s.reply(c, "open session", http.StatusCreated, rec, err)
}

// closeSession answers DELETE /v1/sessions/{id} with 204.
func (s *Server) closeSession(c *gin.Context) {
	if rec, ok := s.ownedSession(c, false, true); ok {
		s.reply(c, "close session", http.StatusNoContent, nil, s.sessions.Close(c.Request.Context(), rec))
	}
}

// getSession answers GET /v1/sessions/{id}: the record and live state; 404
// when the sandbox no longer has it.
func (s *Server) getSession(c *gin.Context) {
	if rec, ok := s.ownedSession(c, false, false); ok {
		v, err := s.sessions.View(c.Request.Context(), rec)
		v.TimeoutSeconds = s.sessionTimeout(rec.Limits)
		s.reply(c, "session info", http.StatusOK, v, err)
	}
}

// listSessions answers GET /v1/sessions: the caller's sessions, oldest
// first.
func (s *Server) listSessions(c *gin.Context) {
	c.JSON(http.StatusOK, wire.SessionList{Sessions: s.sessions.List(c.Request.Context(), owner(c))})
}

// interruptSession answers POST /v1/sessions/{id}/interrupt: whether a
// call was running (it ends with KeyboardInterrupt; the session keeps its
// state).
func (s *Server) interruptSession(c *gin.Context) {
	if rec, ok := s.ownedSession(c, false, true); ok {
		hit, err := s.sessions.Interrupt(c.Request.Context(), rec)
		s.reply(c, "interrupt session", http.StatusOK, wire.Interrupted{Interrupted: hit}, err)
	}
}

// restartSession answers POST /v1/sessions/{id}/restart with the session:
// a fresh Python process, the same files.
func (s *Server) restartSession(c *gin.Context) {
	if rec, ok := s.ownedSession(c, true, true); ok {
		v, err := s.sessions.Restart(c.Request.Context(), rec)
		s.reply(c, "restart session", http.StatusOK, v, err)
	}
}

// reply writes body with status (nil: no body), or err, logged when it
// is a platform failure of op.
func (s *Server) reply(c *gin.Context, op string, status int, body any, err error) {
	switch {
	case err != nil:
		s.logPlatform(op, owner(c), err)
		fail(c, err)
	case body == nil:
		c.Status(status)
	default:
		c.JSON(status, body)
	}
}

// logPlatform logs a platform error worth an operator's attention.
func (s *Server) logPlatform(op, owner string, err error) {
	if e := toError(nil, err); e.Status >= 500 {
		s.log.Warn("api: "+op+" failed", "owner", owner, "err", err)
	}
}
