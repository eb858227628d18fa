package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/wire"
)

// approvalInput is the id of the approval question in InputRequests.
const approvalInput = "airlock_approval"

// approvalSchema is the elicitation form: one yes/no field.
var approvalSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"approve": map[string]any{"type": "boolean", "title": "Run this call?", "description": "true runs the call once; false refuses it"},
	},
	"required": []string{"approve"},
}

// askApproval answers a call the dispatcher held for approval. A client
// that supports elicitation gets an input-required result (SEP-2322: the
// SDK turns it into elicitation/create for older protocol versions) whose
// request state is the approval token, remembered for this MCP session
// only; any other client gets the call refused.
func (s *Server) askApproval(ctx context.Context, req *mcp.CallToolRequest, st *session, call dispatcher.Call, held Outcome) *mcp.CallToolResult {
	if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
		res := s.reject(ctx, held, "this call needs human approval and this MCP client cannot ask the user (it does not support elicitation); the call did not run",
			"no elicitation support in the MCP client")
		return s.render(res)
	}
	token := held.Answer.Result.ApprovalToken
	st.hold(token)
	msg := fmt.Sprintf("Airlock: the tool call %s needs your approval.\n%s\nArguments: %s", call.Name, held.Answer.Message.Content, capString(string(call.Arguments), 2000))
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{approvalInput: &mcp.ElicitParams{Message: msg, RequestedSchema: approvalSchema}},
		RequestState:  token,
	}
}

// resumeApproval handles the retry of a call that asked for approval: the
// token must be one this MCP session was given; the user's answer approves
// or rejects it. ok is false when req is not such a retry.
func (s *Server) resumeApproval(ctx context.Context, req *mcp.CallToolRequest, st *session) (res Outcome, ok bool) {
	token := req.Params.RequestState
	if token == "" {
		return Outcome{}, false
	}
	if !st.take(token) {
		return refused(dispatcher.Call{Name: req.Params.Name}, dispatcher.StatusRejected, "approval_not_found",
			"unknown or already used approval state; call the tool again"), true
	}
	held := Outcome{Answer: wire.ToolCallResponse{Result: wire.ToolResult{ApprovalToken: token}}}
	er, _ := req.Params.InputResponses[approvalInput].(*mcp.ElicitResult)
	if er == nil {
		return s.reject(ctx, held, "this call needs human approval and the MCP client sent no answer; the call did not run", "no elicitation answer"), true
	}
	if approve, _ := er.Content["approve"].(bool); er.Action == "accept" && approve {
		res, err := s.be.Approve(ctx, token)
		if err != nil {
			s.log.Warn("mcp: approve", "owner", st.owner, "err", err)
		}
		return res, true
	}
	return s.reject(ctx, held, "the user refused this call in the MCP client; it did not run", "the user answered "+er.Action+" without approving"), true
}

// reject resolves the held call as rejected and returns an outcome
// carrying msg for the model.
func (s *Server) reject(ctx context.Context, held Outcome, msg, reason string) Outcome {
	res, err := s.be.Reject(ctx, held.Answer.Result.ApprovalToken, reason)
	if err != nil {
		s.log.Warn("mcp: reject", "err", err)
	}
	res.Status, res.Answer.Result.Status, res.Answer.Message.Content = dispatcher.StatusRejected, core.StatusRejected, msg
	if res.Answer.Message.Role == "" {
		res.Answer.Message.Role = "tool"
	}
	if res.Answer.Result.Artifacts == nil {
		res.Answer.Result.Artifacts = []wire.Artifact{}
	}
	return res
}

// capString shortens s to n bytes.
func capString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
