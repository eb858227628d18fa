package api

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
)

// toolApprover is the part of the dispatcher that decides a held tool
// call for its owner (dispatcher.Dispatcher has it).
type toolApprover interface {
	ApproveFor(ctx context.Context, owner, token string) (dispatcher.Call, dispatcher.Result, error)
	RejectFor(ctx context.Context, owner, token, reason string) (dispatcher.Call, dispatcher.Result, error)
}

// decideToolCall answers POST /v1/tool-calls/approvals/{token}: the
// caller approves (the call runs now, in its session if it had one) or
// rejects a call of theirs held at pending_approval outside a run; the
// answer is the call's, as POST /v1/tool-calls would have given it. A
// token that is unknown, used, expired or another key's is 404.
func (s *Server) decideToolCall(c *gin.Context) {
	req, ok := decodeDecision(c)
	if !ok {
		return
	}
	ap, ok := s.deps.Dispatcher.(toolApprover)
	if !ok {
		abortError(c, newError(core.ErrUnavailable, "this server cannot decide held tool calls"))
		return
	}
	ctx, who, token := c.Request.Context(), owner(c), c.Param("token")
	var call dispatcher.Call
	var res dispatcher.Result
	var err error
	if *req.Approve {
		call, res, err = ap.ApproveFor(ctx, who, token)
	} else {
		call, res, err = ap.RejectFor(ctx, who, token, req.Reason)
	}
	if err != nil {
		fail(c, err)
		return
	}
	out, e := s.finishCall(ctx, call, res)
	if e != nil {
		abortError(c, e)
		return
	}
	c.JSON(http.StatusOK, out)
}
