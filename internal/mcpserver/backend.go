package mcpserver

import (
	"context"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
)

// Tool is one tool as MCP lists it: the registry's name, description and
// JSON Schema of the arguments.
type Tool struct {
	Name        string
	Description string
	Parameters  any
	// ReadOnly marks tools that only read (MCP's readOnlyHint).
	ReadOnly bool
}

// Backend is what a Server needs from Airlock: the tools, one way to run a
// call, approvals, and the sessions and their files. It is implemented
// once over the local dispatcher and executor (NewLocal) and once over a
// remote `airlock serve` through the Go client (NewRemote); either way
// every call has exactly one dispatch path.
type Backend interface {
	// Tools lists the tools to serve, sorted by name.
	Tools() []Tool
	// Instructions is the server's instructions text for MCP clients.
	Instructions() string
	// Run validates, authorises and executes one call. Platform failures
	// are results too (StatusBusy, StatusUnavailable...), with a Content
	// that says what happened.
	Run(ctx context.Context, call dispatcher.Call) dispatcher.Result
	// Approve runs the call held under token.
	Approve(ctx context.Context, token string) (dispatcher.Result, error)
	// Reject resolves the call held under token without running it.
	Reject(ctx context.Context, token, reason string) (dispatcher.Result, error)
	// OpenSession opens a sandbox session for owner and returns its id;
	// "" with a nil error means the backend has no sessions, and calls
	// then run one-shot.
	OpenSession(ctx context.Context, owner string, limits core.Limits, mount string) (string, error)
	// CloseSession closes session id; an unknown session is core.ErrNotFound.
	CloseSession(ctx context.Context, owner, id string) error
	// ReadFile returns the bytes of path, relative to the work folder of
	// session id. A missing session or file is core.ErrNotFound, a bad path
	// core.ErrInvalid.
	ReadFile(ctx context.Context, owner, id, path string) ([]byte, error)
}
