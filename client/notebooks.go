package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/airlock-dev/airlock/wire"
)

// GetNotebook returns the notebook saved for session id (GET
// /v1/sessions/{id}/notebook). A session with none saved, another key's
// session and an unknown one are an *APIError with core.ErrNotFound.
func (c *Client) GetNotebook(ctx context.Context, id string) (*wire.Notebook, error) {
	if id == "" {
		return nil, fmt.Errorf("airlock client: GetNotebook: empty session id")
	}
	var nb wire.Notebook
	if err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/v1/sessions/" + seg(id) + "/notebook"}, &nb); err != nil {
		return nil, err
	}
	return &nb, nil
}

// PutNotebook saves cells as the notebook of session id (PUT
// /v1/sessions/{id}/notebook). version is the version last read, 0 for
// the first save; when another save came in between, the answer is an
// *APIError with core.ErrConflict whose Details["current_version"] is the
// saved version. cells must marshal to a JSON array; the body is capped
// at 4 MiB (core.ErrTooLarge).
func (c *Client) PutNotebook(ctx context.Context, id string, cells any, version int64) (*wire.NotebookSaved, error) {
	if id == "" {
		return nil, fmt.Errorf("airlock client: PutNotebook: empty session id")
	}
	r := &request{method: http.MethodPut, path: "/v1/sessions/" + seg(id) + "/notebook"}
	b, err := json.Marshal(cells)
	if err != nil {
		return nil, fmt.Errorf("airlock client: PutNotebook: encode cells: %w", err)
	}
	if err := r.jsonBody(wire.NotebookSave{Cells: b, Version: &version}); err != nil {
		return nil, err
	}
	var out wire.NotebookSaved
	if err := c.doJSON(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
