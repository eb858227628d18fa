package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/airlock-dev/airlock/wire"
)

// CreateSession opens a session: one sandbox that keeps state between
// calls until DeleteSession or its idle timeout (POST /v1/sessions).
// limits may be nil. CreateSessionWith takes the other options.
func (c *Client) CreateSession(ctx context.Context, limits *wire.Limits) (*wire.Session, error) {
	return c.CreateSessionWith(ctx, wire.CreateSessionRequest{Limits: limits})
}

// CreateSessionWith opens a session with opts (POST /v1/sessions), e.g.
// with Background set; a key whose policy does not allow background
// processes gets an *APIError with core.ErrInvalid.
func (c *Client) CreateSessionWith(ctx context.Context, opts wire.CreateSessionRequest) (*wire.Session, error) {
	r := &request{method: http.MethodPost, path: "/v1/sessions"}
	if err := r.jsonBody(opts); err != nil {
		return nil, err
	}
	var s wire.Session
	if err := c.doJSON(ctx, r, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// GetSession returns the record of session id; a closed or expired
// session is an *APIError with core.ErrNotFound.
func (c *Client) GetSession(ctx context.Context, id string) (*wire.Session, error) {
	var s wire.Session
	if err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/v1/sessions/" + seg(id)}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// ListSessions returns the caller's open sessions, oldest first, each
// with its live state and resource use (GET /v1/sessions). Sessions of
// other API keys are never listed.
func (c *Client) ListSessions(ctx context.Context) ([]wire.Session, error) {
	var out wire.SessionList
	if err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/v1/sessions"}, &out); err != nil {
		return nil, err
	}
	return out.Sessions, nil
}

// InterruptSession raises KeyboardInterrupt in the call session id is
// running (POST /v1/sessions/{id}/interrupt) and reports whether one was
// running. The interrupted call ends as an error result; the session
// keeps its variables and files.
func (c *Client) InterruptSession(ctx context.Context, id string) (bool, error) {
	if id == "" {
		return false, fmt.Errorf("airlock client: InterruptSession: empty session id")
	}
	var out wire.Interrupted
	if err := c.doJSON(ctx, &request{method: http.MethodPost, path: "/v1/sessions/" + seg(id) + "/interrupt"}, &out); err != nil {
		return false, err
	}
	return out.Interrupted, nil
}

// RestartSession replaces the Python process of session id (POST
// /v1/sessions/{id}/restart): its variables are gone, its files are
// kept. It returns the session's record.
func (c *Client) RestartSession(ctx context.Context, id string) (*wire.Session, error) {
	if id == "" {
		return nil, fmt.Errorf("airlock client: RestartSession: empty session id")
	}
	var s wire.Session
	if err := c.doJSON(ctx, &request{method: http.MethodPost, path: "/v1/sessions/" + seg(id) + "/restart"}, &s); err != nil {
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
func (c *Client) PutSessionFile(ctx context.Context, id, path string, data io.Reader) (*wire.FileWritten, error) {
	if path == "" {
		return nil, fmt.Errorf("airlock client: PutSessionFile: empty path")
	}
	r := &request{method: http.MethodPut, path: "/v1/sessions/" + seg(id) + "/files/" + filePath(path),
		body: data, contentType: "application/octet-stream"}
	var w wire.FileWritten
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

// ListSessionFiles lists every file under folder ("" for the work folder)
// of session id, walked breadth first within the server's bounds (GET
// /v1/sessions/{id}/files).
func (c *Client) ListSessionFiles(ctx context.Context, id, folder string) (*wire.FileList, error) {
	if id == "" {
		return nil, fmt.Errorf("airlock client: ListSessionFiles: empty session id")
	}
	r := &request{method: http.MethodGet, path: "/v1/sessions/" + seg(id) + "/files"}
	if folder != "" {
		r.query = url.Values{"path": {folder}}
	}
	var out wire.FileList
	if err := c.doJSON(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
