package mcpserver

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvironmentHeader names the environment every call of a remote (/mcp)
// MCP session runs in unless its environment argument names another; the
// query parameter EnvironmentParam of the /mcp URL does the same (the
// API copies it into the header). The first request of a session that
// calls a tool fixes it for the session.
const (
	EnvironmentHeader = "Airlock-Environment"
	EnvironmentParam  = "environment"
)

// sessionEnvironment returns the environment of st's calls: fixed at its
// first tool call from the request's EnvironmentHeader, else the server's
// Config.Environment; "" for none (calls run in the MCP session's sandbox
// session, in the built-in environment).
func (s *Server) sessionEnvironment(st *session, req *mcp.CallToolRequest) string {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.envSet {
		st.envSet, st.env = true, s.cfg.Environment
		if req != nil && req.Extra != nil && req.Extra.Header != nil {
			if h := req.Extra.Header.Get(EnvironmentHeader); h != "" {
				st.env = h
			}
		}
	}
	return st.env
}
