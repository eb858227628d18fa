package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
)

// Dispatcher is the one gate every local tool call goes through.
type Dispatcher interface {
	// Run validates, authorises and executes one call.
	Run(ctx context.Context, call dispatcher.Call) dispatcher.Result
	// Approve runs the call held under token.
	Approve(ctx context.Context, token string) (dispatcher.Result, error)
	// Reject resolves the call held under token without running it.
	Reject(ctx context.Context, token, reason string) (dispatcher.Result, error)
	// Registry is the tool registry the MCP tools are generated from.
	Registry() *dispatcher.Registry
}

// local is the Backend of an in-process stack: calls go through the
// dispatcher's Run; sessions and files through the executor, as the REST
// API's session routes do.
type local struct {
	disp Dispatcher
	exec dispatcher.Executor
	// egress is the network policy of owner's sessions (nil: none;
	// LocalOptions).
	egress func(owner string, envEgress []string) string
	// envs resolves a session-wide environment (LocalOptions; nil: the
	// built-in ones only).
	envs dispatcher.EnvironmentResolver
	// snaps takes snapshots and forks (LocalOptions.Snapshots; nil: no
	// snapshot_session or fork_session tools).
	snaps *localSnaps
}

// NewLocal returns the Backend over disp (every tool call) and exec
// (core.OpSessionOpen, OpSessionClose and OpFileGet only).
func NewLocal(disp Dispatcher, exec dispatcher.Executor) (Backend, error) {
	if disp == nil {
		return nil, errors.New("mcpserver: local backend: a Dispatcher is required")
	}
	if exec == nil {
		return nil, errors.New("mcpserver: local backend: an Executor is required")
	}
	return &local{disp: disp, exec: exec}, nil
}

// Tools implements Backend from the registry.
func (l *local) Tools() []Tool { return RegistryTools(l.disp.Registry()) }

// RegistryTools lists reg's tools as MCP serves them.
func RegistryTools(reg *dispatcher.Registry) []Tool {
	specs := reg.Specs()
	out := make([]Tool, 0, len(specs))
	for _, s := range specs {
		out = append(out, Tool{Name: s.Name, Description: s.Description, Parameters: s.Parameters, ReadOnly: s.Risk == dispatcher.RiskLow})
	}
	return out
}

// Instructions implements Backend: the registry's system prompt.
func (l *local) Instructions() string { return l.disp.Registry().SystemPrompt() }

// Run implements Backend.
func (l *local) Run(ctx context.Context, call dispatcher.Call) Outcome {
	return outcomeOf(l.disp.Run(ctx, call), call.SessionID)
}

// Approve implements Backend.
func (l *local) Approve(ctx context.Context, token string) (Outcome, error) {
	res, err := l.disp.Approve(ctx, token)
	return outcomeOf(res, ""), err
}

// Reject implements Backend.
func (l *local) Reject(ctx context.Context, token, reason string) (Outcome, error) {
	res, err := l.disp.Reject(ctx, token, reason)
	return outcomeOf(res, ""), err
}

// OpenSession implements Backend.
func (l *local) OpenSession(ctx context.Context, owner string, limits core.Limits, mount string) (string, error) {
	req := core.Request{Op: core.OpSessionOpen, Owner: owner, Limits: limits, Mount: mount}
	if l.egress != nil {
		req.Egress = l.egress(owner, nil)
	}
	return l.openWith(ctx, req)
}

// CloseSession implements Backend.
func (l *local) CloseSession(ctx context.Context, owner, id string) error {
	l.forgetOpen(id)
	if _, err := l.exec.Exec(ctx, core.Request{Op: core.OpSessionClose, Owner: owner, SessionID: id}); err != nil {
		return fmt.Errorf("mcpserver: close session %s: %w", id, err)
	}
	return nil
}

// ReadFile implements Backend.
func (l *local) ReadFile(ctx context.Context, owner, id, path string) ([]byte, error) {
	res, err := l.exec.Exec(ctx, core.Request{Op: core.OpFileGet, Owner: owner, SessionID: id, Path: path})
	if err != nil {
		return nil, fmt.Errorf("mcpserver: read %s: %w", path, err)
	}
	if res.Status == core.StatusRejected {
		return nil, fmt.Errorf("mcpserver: read %s: %w: %s", path, core.ErrInvalid, res.Message)
	}
	return res.Data, nil
}
