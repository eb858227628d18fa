package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Notebook is a session's saved notebook: its cells, kept by the server
// exactly as they were sent, their version and when they were saved.
type Notebook struct {
	// Cells are the notebook's cells, each raw JSON (the UI's cell
	// objects: source, language, outputs, ...).
	Cells []json.RawMessage `json:"cells"`
	// Version increases by one on every save, starting at 1.
	Version int64 `json:"version"`
	// UpdatedAt is when the cells were saved.
	UpdatedAt time.Time `json:"updated_at"`
}

// NotebookSaved is the answer of PutNotebook.
type NotebookSaved struct {
	// Version is the new version; pass it to the next PutNotebook.
	Version int64 `json:"version"`
	// UpdatedAt is when the cells were saved.
	UpdatedAt time.Time `json:"updated_at"`
}

// GetNotebook returns the notebook saved for session id (GET
// /v1/sessions/{id}/notebook). A session with none saved, another key's
// session and an unknown one are an *APIError with CodeNotFound.
func (c *Client) GetNotebook(ctx context.Context, id string) (*Notebook, error) {
	if id == "" {
		return nil, fmt.Errorf("airlock client: GetNotebook: empty session id")
	}
	var nb Notebook
	if err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/v1/sessions/" + seg(id) + "/notebook"}, &nb); err != nil {
		return nil, err
	}
	return &nb, nil
}

// PutNotebook saves cells as the notebook of session id (PUT
// /v1/sessions/{id}/notebook). version is the version last read, 0 for
// the first save; when another save came in between, the answer is an
// *APIError with CodeConflict whose Details["current_version"] is the
// saved version. cells must marshal to a JSON array; the body is capped
// at 4 MiB (CodeTooLarge).
func (c *Client) PutNotebook(ctx context.Context, id string, cells any, version int64) (*NotebookSaved, error) {
	if id == "" {
		return nil, fmt.Errorf("airlock client: PutNotebook: empty session id")
	}
	r := &request{method: http.MethodPut, path: "/v1/sessions/" + seg(id) + "/notebook"}
	if err := r.jsonBody(map[string]any{"cells": cells, "version": version}); err != nil {
		return nil, err
	}
	var out NotebookSaved
	if err := c.doJSON(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
