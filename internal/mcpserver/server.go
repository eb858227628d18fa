package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server builds MCP servers over one Backend and tracks the Airlock
// session of every MCP session. It is safe for concurrent use.
type Server struct {
	cfg       Config
	be        Backend
	log       *slog.Logger
	outSchema map[string]any

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*session
	handlers map[string]*mcp.StreamableHTTPHandler
	closed   bool
	wg       sync.WaitGroup
}

// New returns a Server. It fails when a required dependency is missing.
func New(cfg Config, deps Deps) (*Server, error) {
	be := deps.Backend
	if be == nil {
		if deps.Dispatcher == nil || deps.Executor == nil {
			return nil, errors.New("mcpserver: Deps.Backend, or Deps.Dispatcher and Deps.Executor, are required")
		}
		var err error
		if be, err = NewLocalWith(deps.Dispatcher, deps.Executor, LocalOptions{Environments: deps.Environments, Snapshots: deps.Snapshots, Egress: deps.Egress}); err != nil {
			return nil, err
		}
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	out, err := resultSchema()
	if err != nil {
		return nil, err
	}
	return &Server{
		cfg:       cfg.withDefaults(),
		be:        be,
		log:       log,
		outSchema: out,
		sessions:  map[*mcp.ServerSession]*session{},
		handlers:  map[string]*mcp.StreamableHTTPHandler{},
	}, nil
}

// MCPServer returns a new *mcp.Server whose calls run as owner: the
// registry's tools, the session files as resources.
func (s *Server) MCPServer(owner string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: s.cfg.Name, Version: s.cfg.Version}, &mcp.ServerOptions{
		Instructions: s.be.Instructions(),
		Logger:       s.log,
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{},
			Resources: &mcp.ResourceCapabilities{},
		},
	})
	s.addTools(srv, owner)
	s.addResources(srv, owner)
	return srv
}

// Handler returns owner's streamable HTTP handler, made on first use. Each
// owner has its own handler and so its own session table: a session id
// of one owner is unknown to every other.
func (s *Server) Handler(owner string) http.Handler {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.handlers[owner]; ok {
		return h
	}
	srv := s.MCPServer(owner)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		SessionTimeout:      s.cfg.IdleTimeout,
		MaxRequestBodyBytes: s.cfg.MaxBodyBytes,
		Logger:              s.log,
	})
	s.handlers[owner] = h
	return h
}

// Close ends every MCP session this Server knows of and closes their
// Airlock sessions, waiting until that is done or ctx ends.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	var open []*mcp.ServerSession
	for ss := range s.sessions {
		open = append(open, ss)
	}
	s.mu.Unlock()
	for _, ss := range open {
		_ = ss.Close()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mcpserver: close: %w", ctx.Err())
	}
}
