package mcpserver

import (
	"context"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/wire"
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

// EnvSessionOpener is a Backend that opens a sandbox session in an
// environment (both of Airlock's do), so an MCP session with a
// session-wide environment keeps its state between calls. may says which
// environments the owner may use.
type EnvSessionOpener interface {
	OpenSessionIn(ctx context.Context, owner, env string, may func(string) bool, limits core.Limits, mount string) (string, error)
}

// may is the filter of the environments owner may use.
func (s *Server) may(owner string) func(string) bool {
	allowed := []string{dispatcher.AllEnvironments}
	if s.cfg.Environments != nil {
		allowed = s.cfg.Environments(owner)
	}
	return func(name string) bool {
		return slices.Contains(allowed, dispatcher.AllEnvironments) || slices.Contains(allowed, name)
	}
}

// oneShotEnvironment reports whether calls in the session-wide
// environment env run one-shot (the backend cannot open a session in it).
func (s *Server) oneShotEnvironment(env string) bool {
	_, ok := s.be.(EnvSessionOpener)
	return env != "" && !ok
}

// OpenSessionIn implements EnvSessionOpener: the environment resolved as
// the dispatcher resolves a call's (unknown 404, forbidden 403, not built
// 409), then OpSessionOpen in its image.
func (l *local) OpenSessionIn(ctx context.Context, owner, env string, may func(string) bool, limits core.Limits, mount string) (string, error) {
	var t environments.Target
	var err error
	if l.envs != nil {
		t, err = l.envs.Resolve(ctx, env, may)
	} else {
		t, err = (*environments.Resolver)(nil).Resolve(ctx, env, may)
	}
	if err != nil {
		return "", err
	}
	req := core.Request{Op: core.OpSessionOpen, Owner: owner, Limits: limits, Mount: mount}
	t.Apply(&req)
	if l.egress != nil {
		req.Egress = l.egress(owner, t.Egress)
	}
	id, err := l.openWith(ctx, req)
	if err != nil {
		return "", fmt.Errorf("in environment %s: %w", env, err)
	}
	return id, nil
}

// OpenSessionIn implements EnvSessionOpener: POST /v1/sessions with the
// environment (the server resolves it for the key).
func (r *remote) OpenSessionIn(ctx context.Context, _ string, env string, _ func(string) bool, limits core.Limits, mount string) (string, error) {
	if mount != "" {
		return "", core.Errorf("mcpserver: open session", core.ErrInvalid, "a host folder cannot be mounted on a remote server")
	}
	if !r.sessions {
		return "", nil
	}
	s, err := r.c.CreateSessionWith(ctx, wire.CreateSessionRequest{Limits: apiLimits(limits), Environment: env})
	if err != nil {
		return "", apiErr("open session in "+env, err, r.server)
	}
	return s.ID, nil
}
