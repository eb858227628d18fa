package client

import (
	"context"
	"fmt"
	"net/http"

	"github.com/airlock-dev/airlock/wire"
)

// Complete asks session id's kernel for completions at cursorPos (in
// Unicode code points) of code (POST /v1/sessions/{id}/complete), and the
// signature of the call the cursor is inside, if any. It waits for a
// running call in the session to end.
func (c *Client) Complete(ctx context.Context, id, code string, cursorPos int) (*wire.Completion, error) {
	if id == "" {
		return nil, fmt.Errorf("airlock client: Complete: empty session id")
	}
	r := &request{method: http.MethodPost, path: "/v1/sessions/" + seg(id) + "/complete"}
	if err := r.jsonBody(wire.CompleteRequest{Code: code, CursorPos: cursorPos}); err != nil {
		return nil, err
	}
	var out wire.Completion
	if err := c.doJSON(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Variables lists session id's globals with type, shape and size (GET
// /v1/sessions/{id}/variables).
func (c *Client) Variables(ctx context.Context, id string) (*wire.VariableList, error) {
	if id == "" {
		return nil, fmt.Errorf("airlock client: Variables: empty session id")
	}
	var out wire.VariableList
	if err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/v1/sessions/" + seg(id) + "/variables"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
