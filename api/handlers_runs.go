package api

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/wire"
)

// needRuns answers 503 no_model when runs cannot start or be served.
func (s *Server) needRuns(c *gin.Context, forStart bool) bool {
	if s.deps.Runs == nil || (forStart && !s.deps.Runs.Configured()) {
		abortError(c, newError(core.ErrNoModel, noModelHelp))
		return false
	}
	return true
}

// runError logs unexpected failures of the run manager; the error itself
// is mapped by its core.Code like every other.
func (s *Server) runError(err error) error {
	if c := core.CodeOf(err); c == core.ErrInternal {
		s.log.Warn("api: run manager failed", "err", err)
	}
	return err
}

// startRun answers POST /v1/runs with 201 and the run's first snapshot.
func (s *Server) startRun(c *gin.Context) {
	if !s.needRuns(c, true) {
		return
	}
	var req wire.CreateRunRequest
	if err := decodeJSON(c, &req, false); err != nil {
		fail(c, err)
		return
	}
	hasMsgs := len(bytes.TrimSpace(req.Messages)) > 0 && string(bytes.TrimSpace(req.Messages)) != "null"
	switch {
	case strings.TrimSpace(req.Goal) == "" && !hasMsgs:
		fail(c, newError(core.ErrInvalid, `one of "goal" or "messages" is required`))
		return
	case strings.TrimSpace(req.Goal) != "" && hasMsgs:
		fail(c, newError(core.ErrInvalid, `send "goal" or "messages", not both`))
		return
	case hasMsgs && bytes.TrimSpace(req.Messages)[0] != '[':
		fail(c, newError(core.ErrInvalid, `"messages" must be an array of chat messages`))
		return
	case req.MaxSteps < 0:
		fail(c, newError(core.ErrInvalid, `"max_steps" must not be negative`))
		return
	}
	who := owner(c)
	if req.SessionID != "" {
		if _, ok := s.records.Get(c.Request.Context(), who, req.SessionID, true); !ok {
			fail(c, newError(core.ErrNotFound, "session not found"))
			return
		}
	}
	mount, err := s.calls.Input(req.Input)
	if err == nil && req.Environment != "" {
		_, err = s.resolveEnvironment(c.Request.Context(), who, req.Environment)
	}
	if err != nil {
		fail(c, err)
		return
	}
	view, err := s.deps.Runs.Start(agent.RunRequest{
		Goal: req.Goal, Messages: req.Messages, Model: req.Model, MaxSteps: req.MaxSteps,
		SessionID: req.SessionID, Mount: mount, Owner: who, PreviousRunID: req.PreviousRunID,
		Environment: req.Environment,
	})
	if err != nil {
		fail(c, s.runError(err))
		return
	}
	c.JSON(http.StatusCreated, view)
}

// getRun answers GET /v1/runs/{id}.
func (s *Server) getRun(c *gin.Context) {
	s.runAfter(c, nil)
}

// cancelRun answers POST /v1/runs/{id}/cancel with the run's snapshot.
func (s *Server) cancelRun(c *gin.Context) {
	s.runAfter(c, func(who, id string) error { return s.deps.Runs.Cancel(who, id) })
}

// approveRun answers POST /v1/runs/{id}/approvals/{token} with the run's
// snapshot; the body says {"approve": true|false, "reason": "..."}.
func (s *Server) approveRun(c *gin.Context) {
	var req wire.ApprovalDecision
	if s.deps.Runs != nil {
		var ok bool
		if req, ok = decodeDecision(c); !ok {
			return
		}
	}
	s.runAfter(c, func(who, id string) error {
		return s.deps.Runs.Approve(who, id, c.Param("token"), *req.Approve, req.Reason)
	})
}

// decodeDecision reads an approval decision body, answering 400 (and
// false) when it is malformed or says neither true nor false.
func decodeDecision(c *gin.Context) (wire.ApprovalDecision, bool) {
	var req wire.ApprovalDecision
	if err := decodeJSON(c, &req, false); err != nil {
		fail(c, err)
		return req, false
	}
	if req.Approve == nil {
		fail(c, newError(core.ErrInvalid, `"approve" (true or false) is required`))
		return req, false
	}
	return req, true
}

// runAfter answers with the snapshot of the caller's run after op (nil:
// none) acted on it.
func (s *Server) runAfter(c *gin.Context, op func(owner, id string) error) {
	if !s.needRuns(c, false) {
		return
	}
	who, id := owner(c), c.Param("id")
	if op != nil {
		if err := op(who, id); err != nil {
			fail(c, s.runError(err))
			return
		}
	}
	view, err := s.deps.Runs.Get(who, id)
	if err != nil {
		fail(c, s.runError(err))
		return
	}
	c.JSON(http.StatusOK, view)
}
