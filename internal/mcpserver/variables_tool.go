package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/wire"
)

// ToolListVariables names the tool that lists the MCP session's Python
// globals (issue 32's variable panel, for a model).
const ToolListVariables = "list_variables"

// VariablesBackend is a Backend that can list a session's variables
// without running a call: the remote one (GET /v1/sessions/{id}/variables)
// and the local one whose executor asks the kernel (the jobs client).
type VariablesBackend interface {
	// Variables lists owner's session id's globals.
	Variables(ctx context.Context, owner, id string) (wire.VariableList, error)
}

// Variables implements VariablesBackend over the server's route.
func (r *remote) Variables(ctx context.Context, _, id string) (wire.VariableList, error) {
	out, err := r.c.Variables(ctx, id)
	if err != nil {
		return wire.VariableList{}, err
	}
	return *out, nil
}

// kernelAsker is an executor that can ask a session's kernel (the jobs
// client).
type kernelAsker interface {
	IntrospectSession(ctx context.Context, owner, id, code string, q core.Introspect) (json.RawMessage, error)
}

// Variables implements VariablesBackend by asking the session's kernel.
func (l *local) Variables(ctx context.Context, owner, id string) (wire.VariableList, error) {
	ka, ok := l.exec.(kernelAsker)
	if !ok {
		return wire.VariableList{}, core.Errorf("mcpserver", core.ErrUnavailable, "this server's sessions cannot list variables")
	}
	raw, err := ka.IntrospectSession(ctx, owner, id, "", core.Introspect{Kind: core.IntrospectVariables})
	if err != nil {
		return wire.VariableList{}, fmt.Errorf("list variables of session %s: %w", id, err)
	}
	out := wire.VariableList{Variables: []wire.Variable{}}
	if err := json.Unmarshal(raw, &out); err != nil {
		return wire.VariableList{}, fmt.Errorf("list variables of session %s: %w", id, core.E("mcpserver", core.ErrInternal, err))
	}
	if out.Variables == nil {
		out.Variables = []wire.Variable{}
	}
	return out, nil
}

// addVariablesTool registers list_variables when the backend can list
// variables.
func (s *Server) addVariablesTool(srv *mcp.Server, owner string) {
	vb, ok := s.be.(VariablesBackend)
	if !ok {
		return
	}
	if l, isLocal := s.be.(*local); isLocal {
		if _, ok := l.exec.(kernelAsker); !ok {
			return
		}
	}
	srv.AddTool(&mcp.Tool{Name: ToolListVariables, InputSchema: noArgs,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
		Description: "List this session's Python variables (name, type, module, shape, size in bytes, a short summary) without running code; names starting with _ and modules are left out."},
		s.snapshotHandler(owner, func(ctx context.Context, sid string, _ *session) (any, error) { return vb.Variables(ctx, owner, sid) }))
}
