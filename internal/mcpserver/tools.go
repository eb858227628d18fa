package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/dispatcher"
)

// callerMCP marks MCP calls in the audit log.
const callerMCP = "mcp"

// addTools registers every tool of the backend on srv, with the registry's
// name, description and parameter schema, and the Result output schema.
func (s *Server) addTools(srv *mcp.Server, owner string) {
	h := s.callTool(owner)
	for _, tl := range s.be.Tools() {
		srv.AddTool(&mcp.Tool{
			Name:         tl.Name,
			Description:  tl.Description,
			InputSchema:  withEnvironment(tl.Parameters),
			OutputSchema: s.outSchema,
			Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: tl.ReadOnly, OpenWorldHint: new(false)},
		}, h)
	}
	s.addSnapshotTools(srv, owner)
	s.addVariablesTool(srv, owner)
}

// callTool returns the tools/call handler of owner's server: open the MCP
// session's Airlock session if needed, run the call through the
// backend (the dispatcher's Run, locally or on the remote server), resolve an approval, render the result.
func (s *Server) callTool(owner string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		st, err := s.session(req.Session, owner)
		if err != nil {
			return errorResult("the MCP server is shutting down; the call did not run"), nil
		}
		sessEnv := s.sessionEnvironment(st, req)
		oneShot := s.oneShotEnvironment(sessEnv)
		var sid string
		if !oneShot { // the MCP session's sandbox session, in its environment
			sid, err = s.ensure(ctx, st)
		}
		if err == nil && sid == "" && sessEnv != "" {
			oneShot = true // a backend without sessions
		}
		if err != nil {
			s.log.Warn("mcp: open session", "owner", owner, "err", err)
			return errorResult("could not open a sandbox session; the call did not run: " + err.Error()), nil
		}
		if res, ok := s.resumeApproval(ctx, req, st); ok {
			if gone(res) {
				st.forget(sid)
			}
			return s.render(res), nil
		}
		args := json.RawMessage(req.Params.Arguments)
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		call := dispatcher.Call{ID: callID(), Name: req.Params.Name, Arguments: args, Owner: owner,
			SessionID: sid, Limits: s.cfg.Limits, Caller: callerMCP}
		env, rest, ok := splitEnvironment(args)
		if !ok && oneShot { // a backend that cannot open sessions in it: one-shot calls in it
			env, rest, ok = sessEnv, args, true
		}
		if ok {
			// A call naming an environment (or in an MCP session with
			// one) runs one-shot in it, beside the MCP session's sandbox.
			call.Arguments, call.Environment, call.SessionID = rest, env, ""
			call.Environments = []string{dispatcher.AllEnvironments}
			if s.cfg.Environments != nil {
				call.Environments = s.cfg.Environments(owner)
			}
		}
		stop := s.progress(ctx, req)
		res := s.be.Run(ctx, call)
		if lost(res) && ctx.Err() == nil {
			// Nothing ran: the sandbox session is gone (expired, or ended
			// by the sandbox). Run once in a fresh one and say so.
			st.forget(sid)
			if sid, err = s.ensure(ctx, st); err == nil {
				call.SessionID = sid
				res = s.be.Run(ctx, call)
				res.Answer.Message.Content = sessionRenewed + res.Answer.Message.Content
			}
		}
		stop()
		if res.Status == dispatcher.StatusPendingApproval {
			return s.askApproval(ctx, req, st, call, res), nil
		}
		if gone(res) {
			st.forget(sid)
		}
		return s.render(res), nil
	}
}

// sessionRenewed prefixes the result of a call moved to a new session.
const sessionRenewed = "[airlock: the previous sandbox session had ended, so this call ran in a new one: variables and /work files of earlier calls are gone]\n"

// lost reports whether res says the session was gone before anything ran.
func lost(res Outcome) bool {
	return res.Status == dispatcher.StatusSessionNotFound || res.Status == dispatcher.StatusSessionLost
}

// gone reports whether res says the call's session no longer exists.
func gone(res Outcome) bool {
	switch res.Status {
	case dispatcher.StatusSessionNotFound, dispatcher.StatusSessionLost:
		return true
	}
	return res.Answer.Result.SessionEnded
}

// callID returns a fresh tool call id for the audit log.
func callID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "mcp_" + hex.EncodeToString(b[:])
}
