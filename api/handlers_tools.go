package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
)

// listTools answers GET /v1/tools: {"tools": [...]} in OpenAI's form.
func (s *Server) listTools(c *gin.Context) {
	tools := s.deps.Dispatcher.ToolsJSON()
	if tools == nil {
		tools = []map[string]any{}
	}
	c.JSON(http.StatusOK, gin.H{"tools": tools})
}

// toolCall answers POST /v1/tool-calls; with "session_id" it runs in that
// session like POST /v1/sessions/{id}/tool-calls.
func (s *Server) toolCall(c *gin.Context) {
	var req toolCallRequest
	if err := decodeJSON(c, &req, false); err != nil {
		fail(c, err)
		return
	}
	s.runToolCall(c, req)
}

// sessionToolCall answers POST /v1/sessions/{id}/tool-calls.
func (s *Server) sessionToolCall(c *gin.Context) {
	id := c.Param("id")
	rec, ok := s.sessions.get(owner(c), id, true)
	if !ok {
		abortError(c, newError(core.ErrNotFound, "session not found"))
		return
	}
	c.Set(ctxSessionRecord, rec) // prepareCall uses it instead of reading the store again
	var req toolCallRequest
	if err := decodeJSON(c, &req, false); err != nil {
		fail(c, err)
		return
	}
	if req.SessionID != "" && req.SessionID != id {
		abortError(c, newError(core.ErrInvalid, `"session_id" differs from the session in the path`))
		return
	}
	req.SessionID = id
	s.runToolCall(c, req)
}

// runToolCall checks the request, sends it through the dispatcher and
// writes the tool message and structured result; with Accept:
// text/event-stream or ?stream=true it streams the call (see streamCall).
func (s *Server) runToolCall(c *gin.Context, req toolCallRequest) {
	fp := fingerprint(req)
	key := c.GetHeader("Idempotency-Key")
	if len(key) > maxIdempotencyKey {
		abortError(c, newError(core.ErrInvalid, fmt.Sprintf("Idempotency-Key is %d bytes, over the limit of %d", len(key), maxIdempotencyKey)))
		return
	}
	if key == "" && req.ID != "" {
		// The client's call id (a generated one is never retried); clients
		// reuse ids across different calls, so the body is part of the key.
		key = "call:" + req.ID + ":" + fp[:16]
	}
	call, ok := s.prepareCall(c, &req)
	if !ok {
		return
	}
	if key != "" {
		call.IdempotencyKey = key
	}
	if wantsStream(c) {
		if key == "" {
			s.streamCall(c, call)
		} else {
			s.streamIdempotent(c, call, key, fp)
		}
		return
	}
	var stop func()
	if key != "" {
		run, ver := s.idemBegin(c, call.Owner, key, fp)
		if !run {
			return
		}
		stop = s.idemHold(call.Owner, key, fp, ver)
	}
	out, e := s.finishCall(c.Request.Context(), call, s.deps.Dispatcher.Run(c.Request.Context(), call))
	if stop != nil {
		stop()
	}
	if key != "" {
		status, body := http.StatusOK, []byte(nil)
		if e != nil {
			status = e.Status
			body, _ = json.Marshal(errorBody{Error: e})
		} else {
			body, _ = json.Marshal(out)
		}
		s.idemFinish(call.Owner, key, fp, status, body, notRunStatus(status))
	}
	if e != nil {
		abortError(c, e)
		return
	}
	c.JSON(http.StatusOK, out)
}

// ctxSessionRecord is the gin context key under which sessionToolCall
// leaves the session record it checked (and touched).
const ctxSessionRecord = "airlock.session"

// checkedSession returns the record of session id that this request's
// route already checked, if any.
func checkedSession(c *gin.Context, id string) (sessionRecord, bool) {
	v, ok := c.Get(ctxSessionRecord)
	if !ok {
		return sessionRecord{}, false
	}
	rec, ok := v.(sessionRecord)
	return rec, ok && rec.ID == id
}

// prepareCall validates req and builds the dispatcher call; on a bad
// request it writes the error and returns false.
func (s *Server) prepareCall(c *gin.Context, req *toolCallRequest) (dispatcher.Call, bool) {
	if err := req.validate(); err != nil {
		fail(c, err)
		return dispatcher.Call{}, false
	}
	who := owner(c)
	background := false
	if req.SessionID != "" {
		rec, ok := checkedSession(c, req.SessionID)
		if !ok {
			rec, ok = s.sessions.get(who, req.SessionID, true)
		}
		if !ok {
			abortError(c, newError(core.ErrNotFound, "session not found"))
			return dispatcher.Call{}, false
		}
		background = rec.Background
	}
	limits, err := req.Limits.toSandbox()
	if err == nil {
		err = s.checkCeiling(who, limits)
	}
	if err != nil {
		fail(c, err)
		return dispatcher.Call{}, false
	}
	mount, err := s.inputFolder(req.Input)
	if err != nil {
		fail(c, err)
		return dispatcher.Call{}, false
	}
	if req.ID == "" {
		req.ID = newID("call_")
	}
	var approvalTools, requireApproval []string
	if p := s.policy(who); p != nil {
		approvalTools, requireApproval = p.ApprovalTools, p.RequireApproval
	}
	return dispatcher.Call{
		ApprovalTools:   approvalTools,
		RequireApproval: requireApproval,
		ID:              req.ID,
		Name:            req.Function.Name,
		Arguments:       req.Function.Arguments,
		Owner:           who,
		SessionID:       req.SessionID,
		Mount:           mount,
		MountName:       req.Input,
		Limits:          limits,
		Ceiling:         s.ceiling(who),
		Background:      background,
		Caller:          "api",
	}, true
}

// finishCall records what the call did to its session and builds the
// answer: the 200 body, or the error a platform outcome maps to. A caller
// who went away does not end the session: only the sandbox saying it is
// gone does.
func (s *Server) finishCall(ctx context.Context, call dispatcher.Call, res dispatcher.Result) (toolCallResponse, *Error) {
	if res.CallID == "" {
		res.CallID = call.ID
	}
	if res.Name == "" {
		res.Name = call.Name
	}
	if call.SessionID != "" && (res.Status == dispatcher.StatusSessionNotFound || res.Status == dispatcher.StatusSessionLost ||
		(res.Sandbox != nil && res.Sandbox.SessionEnded)) {
		s.sessions.remove(call.Owner, call.SessionID)
	} else if call.SessionID != "" {
		s.sessions.touch(call.Owner, call.SessionID) // the sandbox counts idle time from the call's end
	}
	out := s.buildResponse(call.Owner, call.SessionID, res)
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
