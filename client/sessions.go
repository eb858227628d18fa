package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// CreateSession opens a session: one sandbox that keeps state between
// calls until DeleteSession or its idle timeout (POST /v1/sessions).
// limits may be nil.
func (c *Client) CreateSession(ctx context.Context, limits *Limits) (*Session, error) {
	r := &request{method: http.MethodPost, path: "/v1/sessions"}
	if err := r.jsonBody(struct {
		Limits *Limits `json:"limits,omitempty"`
	}{limits}); err != nil {
		return nil, err
	}
	var s Session
	if err := c.doJSON(ctx, r, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// GetSession returns the record of session id; a closed or expired
// session is an *APIError with CodeNotFound.
func (c *Client) GetSession(ctx context.Context, id string) (*Session, error) {
	var s Session
	if err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/v1/sessions/" + seg(id)}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// DeleteSession closes session id and destroys its sandbox.
func (c *Client) DeleteSession(ctx context.Context, id string) error {
	return c.doJSON(ctx, &request{method: http.MethodDelete, path: "/v1/sessions/" + seg(id)}, nil)
}

// PutSessionFile uploads data as path (relative, may contain slashes) into
// the work folder of session id (PUT /v1/sessions/{id}/files/{path}).
func (c *Client) PutSessionFile(ctx context.Context, id, path string, data io.Reader) (*FileWritten, error) {
	if path == "" {
		return nil, fmt.Errorf("airlock client: PutSessionFile: empty path")
	}
	r := &request{method: http.MethodPut, path: "/v1/sessions/" + seg(id) + "/files/" + filePath(path),
		body: data, contentType: "application/octet-stream"}
	var w FileWritten
	if err := c.doJSON(ctx, r, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// GetSessionFile downloads path from the work folder of session id (GET
// /v1/sessions/{id}/files/{path}).
func (c *Client) GetSessionFile(ctx context.Context, id, path string) (*Download, error) {
	if path == "" {
		return nil, fmt.Errorf("airlock client: GetSessionFile: empty path")
	}
	return c.doBytes(ctx, &request{method: http.MethodGet, path: "/v1/sessions/" + seg(id) + "/files/" + filePath(path)})
}
