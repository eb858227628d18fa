package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/wire"
)

// Names of the session snapshot tools (issue 30).
const (
	ToolSnapshotSession = "snapshot_session"
	ToolForkSession     = "fork_session"
)

// SnapshotBackend is a Backend that can snapshot and fork its sessions
// (the remote one: a server's POST /v1/sessions/{id}/snapshot and /fork;
// the local one with LocalOptions.Snapshots: the worker's snapshots).
type SnapshotBackend interface {
	// Snapshot saves owner's session id: its namespace, files and calls.
	Snapshot(ctx context.Context, owner, id string) (wire.SnapshotCreated, error)
	// Fork opens a new session with the state of owner's session id.
	Fork(ctx context.Context, owner, id string) (wire.Session, error)
}

// snapshotCapable is a SnapshotBackend that may lack snapshots (the local
// one without LocalOptions.Snapshots).
type snapshotCapable interface{ canSnapshot() bool }

// Snapshot implements SnapshotBackend over the server's route.
func (r *remote) Snapshot(ctx context.Context, _, id string) (wire.SnapshotCreated, error) {
	out, err := r.c.SnapshotSession(ctx, id)
	if err != nil {
		return wire.SnapshotCreated{}, err
	}
	return *out, nil
}

// Fork implements SnapshotBackend over the server's route.
func (r *remote) Fork(ctx context.Context, _, id string) (wire.Session, error) {
	out, err := r.c.ForkSession(ctx, id)
	if err != nil {
		return wire.Session{}, err
	}
	return *out, nil
}

// noArgs is the input schema of a tool without arguments.
var noArgs = map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false}

// addSnapshotTools registers snapshot_session and fork_session when the
// backend takes snapshots.
func (s *Server) addSnapshotTools(srv *mcp.Server, owner string) {
	sb, ok := s.be.(SnapshotBackend)
	if !ok {
		return
	}
	if c, ok := s.be.(snapshotCapable); ok && !c.canSnapshot() {
		return
	}
	srv.AddTool(&mcp.Tool{Name: ToolSnapshotSession, InputSchema: noArgs,
		Description: "Save this session (its Python variables, /work files and call log) as a snapshot that can be restored later or elsewhere. Answers snapshot_id, bytes and the variables that could not be saved (open files, generators, ...), by name."},
		s.snapshotHandler(owner, func(ctx context.Context, sid string, _ *session) (any, error) { return sb.Snapshot(ctx, owner, sid) }))
	srv.AddTool(&mcp.Tool{Name: ToolForkSession, InputSchema: noArgs,
		Description: "Branch this session: a new independent session with the same variables and files; the following calls run in the new one, the original stays as it was."},
		s.snapshotHandler(owner, func(ctx context.Context, sid string, st *session) (any, error) {
			v, err := sb.Fork(ctx, owner, sid)
			if err != nil {
				return nil, err
			}
			st.mu.Lock()
			if st.id == sid {
				st.left = append(st.left, sid)
			}
			st.id = v.ID
			st.mu.Unlock()
			return map[string]any{"session_id": v.ID, "forked_from": sid, "restored": v.Restored}, nil
		}))
}

// snapshotHandler runs fn on the MCP session's Airlock session and
// answers its result as JSON text (the frame of every session tool that
// takes no arguments: snapshot, fork, variables).
func (s *Server) snapshotHandler(owner string, fn func(ctx context.Context, sid string, st *session) (any, error)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if msg := unexpectedArgs(req.Params.Name, req.Params.Arguments); msg != "" {
			return errorResult(msg), nil
		}
		st, err := s.session(req.Session, owner)
		if err != nil {
			return errorResult("the MCP server is shutting down"), nil
		}
		sid, err := s.ensure(ctx, st)
		if err != nil || sid == "" {
			return errorResult("this server has no sandbox sessions, so " + req.Params.Name + " has nothing to act on"), nil
		}
		out, err := fn(ctx, sid, st)
		if err != nil {
			return errorResult(req.Params.Name + " failed: " + err.Error()), nil
		}
		b, _ := json.Marshal(out)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	}
}

// unexpectedArgs refuses any argument to a tool that takes none (its
// schema says additionalProperties false, which the SDK does not check
// for tools added without a typed handler): the refusal naming them, or
// "" when args is empty.
func unexpectedArgs(tool string, args json.RawMessage) string {
	if len(args) == 0 || string(args) == "null" {
		return ""
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return tool + " takes no arguments; its arguments are not a JSON object. The tool did not run."
	}
	if len(m) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(m))
	return fmt.Sprintf("%s takes no arguments; unknown argument(s): %s. The tool did not run.", tool, strings.Join(names, ", "))
}
