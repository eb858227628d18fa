package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/airlock-dev/airlock/wire"
)

// GetHealth reports whether the server process is up (GET /healthz).
func (c *Client) GetHealth(ctx context.Context) (*wire.Health, error) {
	var h wire.Health
	return &h, c.doJSON(ctx, &request{method: http.MethodGet, path: "/healthz"}, &h)
}

// GetReadiness reports whether the server's dependencies answer (GET
// /readyz). A server that is not ready answers an *APIError with
// core.ErrNotReady whose Details hold the failing checks.
func (c *Client) GetReadiness(ctx context.Context) (*wire.Readiness, error) {
	var r wire.Readiness
	return &r, c.doJSON(ctx, &request{method: http.MethodGet, path: "/readyz"}, &r)
}

// GetInfo returns the server's facts: whether keys are needed, whether a
// model is configured, the upload limit and the allowed input folders.
func (c *Client) GetInfo(ctx context.Context) (*wire.Info, error) {
	var i wire.Info
	return &i, c.doJSON(ctx, &request{method: http.MethodGet, path: "/v1/info"}, &i)
}

// GetOpenAPI returns the OpenAPI document the server serves.
func (c *Client) GetOpenAPI(ctx context.Context) (json.RawMessage, error) {
	var doc json.RawMessage
	return doc, c.doJSON(ctx, &request{method: http.MethodGet, path: "/openapi.json"}, &doc)
}

// ListTools returns the tool registry in OpenAI's tools format, ready to
// pass to a chat completion.
func (c *Client) ListTools(ctx context.Context) ([]wire.Tool, error) {
	var out wire.Tools
	if err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/v1/tools"}, &out); err != nil {
		return nil, err
	}
	return out.Tools, nil
}
