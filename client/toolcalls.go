package client

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/airlock-dev/airlock/wire"
)

// CallTool runs one tool call in a fresh sandbox (POST /v1/tool-calls).
// Whatever the code did (failed, timed out, was refused by policy) the
// answer is a *wire.ToolCallResponse; errors are platform failures
// (*APIError).
func (c *Client) CallTool(ctx context.Context, call ToolCall) (*wire.ToolCallResponse, error) {
	return c.callTool(ctx, "/v1/tool-calls", call)
}

// CallSessionTool runs one tool call in session id, which keeps its
// variables, files and working folder between calls (POST
// /v1/sessions/{id}/tool-calls).
func (c *Client) CallSessionTool(ctx context.Context, id string, call ToolCall) (*wire.ToolCallResponse, error) {
	if id == "" {
		return nil, fmt.Errorf("airlock client: CallSessionTool: empty session id")
	}
	return c.callTool(ctx, "/v1/sessions/"+seg(id)+"/tool-calls", call)
}

// callTool posts call to path.
func (c *Client) callTool(ctx context.Context, path string, call ToolCall) (*wire.ToolCallResponse, error) {
	r, err := toolCallRequest(path, call)
	if err != nil {
		return nil, err
	}
	var out wire.ToolCallResponse
	if err := c.doJSON(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// toolCallRequest is the POST of call to path.
func toolCallRequest(path string, call ToolCall) (*request, error) {
	if strings.TrimSpace(call.Name) == "" {
		return nil, fmt.Errorf("airlock client: tool call: empty tool name")
	}
	body, err := call.Request()
	if err != nil {
		return nil, err
	}
	r := &request{method: http.MethodPost, path: path}
	return r, r.jsonBody(body)
}

// RunPython runs code with the run_python tool in a fresh sandbox.
func (c *Client) RunPython(ctx context.Context, code string) (*wire.ToolCallResponse, error) {
	return c.CallTool(ctx, ToolCall{Name: "run_python", Arguments: map[string]any{"code": code}})
}

// GetArtifact downloads an artifact of a one-shot call by its id (GET
// /v1/artifacts/{artifact}).
func (c *Client) GetArtifact(ctx context.Context, id string) (*Download, error) {
	return c.doBytes(ctx, &request{method: http.MethodGet, path: "/v1/artifacts/" + seg(id)})
}

// GetSessionArtifact downloads an artifact of a call in session by its id
// (GET /v1/sessions/{id}/artifacts/{artifact}); it stays available for a
// while after the session closed.
func (c *Client) GetSessionArtifact(ctx context.Context, session, id string) (*Download, error) {
	return c.doBytes(ctx, &request{method: http.MethodGet, path: "/v1/sessions/" + seg(session) + "/artifacts/" + seg(id)})
}

// DownloadArtifact downloads a from the URL its result gave.
func (c *Client) DownloadArtifact(ctx context.Context, a wire.Artifact) (*Download, error) {
	if a.URL == "" || !strings.HasPrefix(a.URL, "/v1/") {
		return nil, fmt.Errorf("airlock client: artifact %q has no download URL (the server did not keep its bytes)", a.Name)
	}
	return c.doBytes(ctx, &request{method: http.MethodGet, path: a.URL})
}
