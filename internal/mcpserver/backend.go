package mcpserver

import (
	"context"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/toolcalls"
	"github.com/airlock-dev/airlock/wire"
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

// Outcome is one call's answer as the Server renders it: the REST API's
// answer (the tool message and the structured result, wire types), the
// dispatcher's status, which says more than the result's (pending approval
// and the platform failures), and the bytes of the result's artifacts.
type Outcome struct {
	Status dispatcher.Status
	Answer wire.ToolCallResponse
	// Files holds the bytes of Answer.Result.Artifacts, by index; nil
	// where they were not fetched (too large, or not kept).
	Files [][]byte
}

// outcomeOf is the Outcome of a dispatcher result of a call in session.
func outcomeOf(res dispatcher.Result, session string) Outcome {
	out := Outcome{Status: res.Status, Answer: toolcalls.Answer(res, session)}
	if res.Sandbox != nil {
		for _, a := range res.Sandbox.Artifacts {
			out.Files = append(out.Files, a.Data)
		}
	}
	return out
}

// refused is an Outcome of call with status st that ran nothing, whose
// message for the model is msg.
func refused(call dispatcher.Call, st dispatcher.Status, reason, msg string) Outcome {
	return Outcome{Status: st, Answer: wire.ToolCallResponse{
		Message: wire.ToolMessage{Role: "tool", ToolCallID: call.ID, Content: msg},
		Result: wire.ToolResult{ToolCallID: call.ID, Name: call.Name, Status: core.Status(st), Reason: reason,
			SessionID: call.SessionID, Artifacts: []wire.Artifact{}},
	}}
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
	// are outcomes too (StatusBusy, StatusUnavailable...), with a tool
	// message that says what happened.
	Run(ctx context.Context, call dispatcher.Call) Outcome
	// Approve runs the call held under token.
	Approve(ctx context.Context, token string) (Outcome, error)
	// Reject resolves the call held under token without running it.
	Reject(ctx context.Context, token, reason string) (Outcome, error)
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
