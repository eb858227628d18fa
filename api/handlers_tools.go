package api

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/internal/toolcalls"
	"github.com/airlock-dev/airlock/wire"
)

// listTools answers GET /v1/tools: the registry in OpenAI's tools form.
func (s *Server) listTools(c *gin.Context) {
	var out wire.Tools
	b, err := json.Marshal(s.deps.Dispatcher.ToolsJSON())
	if err == nil {
		err = json.Unmarshal(b, &out.Tools)
	}
	if err != nil {
		fail(c, core.E("api: list tools", core.ErrInternal, err))
		return
	}
	if out.Tools == nil {
		out.Tools = []wire.Tool{}
	}
	c.JSON(http.StatusOK, out)
}

// toolCall answers POST /v1/tool-calls; with "session_id" it runs in that
// session like POST /v1/sessions/{id}/tool-calls.
func (s *Server) toolCall(c *gin.Context) {
	var req wire.ToolCallRequest
	if err := decodeJSON(c, &req, false); err != nil {
		fail(c, err)
		return
	}
	s.runToolCall(c, req, nil)
}

// sessionToolCall answers POST /v1/sessions/{id}/tool-calls.
func (s *Server) sessionToolCall(c *gin.Context) {
	rec, ok := s.ownedSession(c, true, false)
	if !ok {
		return
	}
	id := rec.ID
	var req wire.ToolCallRequest
	if err := decodeJSON(c, &req, false); err != nil {
		fail(c, err)
		return
	}
	if req.SessionID != "" && req.SessionID != id {
		abortError(c, newError(core.ErrInvalid, `"session_id" differs from the session in the path`))
		return
	}
	req.SessionID = id
	if env := sessionEnvironment(rec); req.Environment != "" && req.Environment != env {
		abortError(c, newError(core.ErrInvalid, fmt.Sprintf(`"environment" %q is not this session's environment (%q): a session's calls run in the environment it was opened in; leave "environment" out or open a session in %q`, req.Environment, env, req.Environment)))
		return
	}
	if req.Function.Name == dispatcher.ToolFetchURL && rec.Environment != "" {
		req.Environment = rec.Environment // fetch_url follows its session's environment
	}
	s.runToolCall(c, req, &rec)
}

// runToolCall checks the request, sends it through the dispatcher and
// writes the tool message and structured result; with Accept:
// text/event-stream or ?stream=true it streams the call (see streamCall).
// A request with an idempotency key runs at most once per key (see
// idempotency.go). rec is the session's record when the route read it.
func (s *Server) runToolCall(c *gin.Context, req wire.ToolCallRequest, rec *sessionrecords.Record) {
	r, ok := s.idemRequest(c, req)
	if !ok {
		return
	}
	call, ok := s.prepareCall(c, &req, rec)
	if !ok {
		return
	}
	switch {
	case wantsStream(c) && r.Key == "":
		s.streamCall(c, call)
	case wantsStream(c):
		s.streamIdempotent(c, call, r)
	case r.Key == "":
		ctx := c.Request.Context()
		out, e := s.finishCall(ctx, call, s.deps.Dispatcher.Run(ctx, call))
		answer(c, out, e)
	default:
		s.runIdempotent(c, call, r)
	}
}

// answer writes a tool call's answer: the 200 body or the error.
func answer(c *gin.Context, out wire.ToolCallResponse, e *Error) {
	if e != nil {
		abortError(c, e)
		return
	}
	c.JSON(http.StatusOK, out)
}

// prepareCall validates req and builds the dispatcher call, in its
// session (whose record rec is, when the route read it); on a bad request
// it writes the error and returns false.
func (s *Server) prepareCall(c *gin.Context, req *wire.ToolCallRequest, rec *sessionrecords.Record) (dispatcher.Call, bool) {
	who := owner(c)
	if req.ID == "" {
		req.ID = "call_" + strings.ToLower(rand.Text())
	}
	if req.SessionID != "" && rec == nil {
		if err := toolcalls.Check(req); err != nil {
			fail(c, err)
			return dispatcher.Call{}, false
		}
		r, ok := s.records.Get(c.Request.Context(), who, req.SessionID, true)
		if !ok {
			abortError(c, newError(core.ErrNotFound, "session not found"))
			return dispatcher.Call{}, false
		}
		rec = &r
	}
	var call dispatcher.Call
	var err error
	if rec != nil {
		call, err = s.calls.CallIn(who, req, "api", rec.Limits)
	} else {
		call, err = s.calls.Call(who, req, "api")
	}
	if err != nil {
		fail(c, err)
		return dispatcher.Call{}, false
	}
	if rec != nil {
		call.SessionID, call.Background = rec.ID, rec.Background
	}
	return call, true
}

// finishCall records what the call did to its session and builds the
// answer (toolcalls.Service.Finish): the 200 body, or the error a
// platform outcome maps to.
func (s *Server) finishCall(ctx context.Context, call dispatcher.Call, res dispatcher.Result) (wire.ToolCallResponse, *Error) {
	out := s.calls.Finish(ctx, call, res)
	if e := statusError(res, out.Message); e != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			e = toError(ctx, ctx.Err()).withDetails(e.Details)
		}
		if e.Status >= 500 && ctx.Err() == nil {
			s.log.Warn("api: tool call failed", "owner", call.Owner, "tool", call.Name, "status", res.Status, "err", res.Err)
		}
		return out, e
	}
	return out, nil
}

// sessionEnvironment is the environment session rec was opened in (the
// built-in python one when its record names none).
func sessionEnvironment(rec sessionrecords.Record) string {
	if rec.Environment == "" {
		return environments.Python
	}
	return rec.Environment
}
