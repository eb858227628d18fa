package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/core"
)

// MCP serves the Model Context Protocol's streamable HTTP transport for
// one owner. Each owner gets its own handler, so a session id of one key
// is unknown to every other.
type MCP interface {
	// Handler returns owner's streamable HTTP handler.
	Handler(owner string) http.Handler
}

// mountMCP adds /mcp behind the same key authentication, rate limit and
// per-key concurrency as /v1: a POST (one JSON-RPC message, whose answer
// may stream while a tool runs) and a DELETE hold a call slot, the GET
// event stream holds a stream slot.
func (s *Server) mountMCP(r *gin.Engine) {
	m := r.Group("/mcp", s.authenticate(), s.rateLimit())
	slow := s.timeout(s.cfg.ToolCallTimeout)
	m.POST("", s.limitConcurrency(s.callGate), slow, s.serveMCP)
	m.DELETE("", s.limitConcurrency(s.callGate), s.timeout(s.cfg.RequestTimeout), s.serveMCP)
	m.GET("", s.limitConcurrency(s.streamGate), s.timeout(s.cfg.StreamTimeout), s.serveMCP)
}

// serveMCP hands the request to the owner's MCP handler.
func (s *Server) serveMCP(c *gin.Context) {
	if s.deps.MCP == nil {
		abortError(c, newError(core.ErrUnavailable, "MCP is not available on this server"))
		return
	}
	mcpEnvironmentParam(c.Request)
	s.deps.MCP.Handler(owner(c)).ServeHTTP(c.Writer, c.Request)
}

// mcpEnvironmentParam copies the /mcp URL's environment query parameter
// into the Airlock-Environment header (a header the client sent wins):
// the environment every call of the MCP session runs in unless its
// environment argument names another (mcpserver.EnvironmentHeader).
func mcpEnvironmentParam(r *http.Request) {
	if env := r.URL.Query().Get("environment"); env != "" && r.Header.Get("Airlock-Environment") == "" {
		r.Header.Set("Airlock-Environment", env)
	}
}
