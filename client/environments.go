package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/airlock-dev/airlock/wire"
)

// Environments lists the environments: the built-in ones, then the custom
// ones (GET /v1/environments).
func (c *Client) Environments(ctx context.Context) (*wire.EnvironmentList, error) {
	var out wire.EnvironmentList
	if err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/v1/environments"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Environment returns one environment (GET /v1/environments/{name}); an
// unknown one is an *APIError with core.ErrNotFound.
func (c *Client) Environment(ctx context.Context, name string) (*wire.Environment, error) {
	var out wire.Environment
	if err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/v1/environments/" + seg(name)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateEnvironment starts building an environment (POST
// /v1/environments; admin keys, else an *APIError with core.ErrForbidden)
// and returns it as its build began, or as it ended for a no-op.
func (c *Client) CreateEnvironment(ctx context.Context, req wire.CreateEnvironmentRequest) (*wire.Environment, error) {
	r := &request{method: http.MethodPost, path: "/v1/environments"}
	if err := r.jsonBody(req); err != nil {
		return nil, err
	}
	var out wire.Environment
	if err := c.doJSON(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteEnvironment removes an environment and its images (DELETE
// /v1/environments/{name}; admin keys).
func (c *Client) DeleteEnvironment(ctx context.Context, name string) error {
	return c.doJSON(ctx, &request{method: http.MethodDelete, path: "/v1/environments/" + seg(name)}, nil)
}

// EnvironmentEvents streams the latest build's events of an environment
// (GET /v1/environments/{name}/events; admin keys) to fn until the build's
// last event, the stream's end or ctx.
func (c *Client) EnvironmentEvents(ctx context.Context, name string, fn func(wire.EnvironmentEvent)) error {
	r := &request{method: http.MethodGet, path: "/v1/environments/" + seg(name) + "/events", header: http.Header{"Accept": {"text/event-stream"}}}
	res, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev wire.EnvironmentEvent
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return fmt.Errorf("airlock client: environment events: %w", err)
		}
		fn(ev)
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("airlock client: environment events: %w", err)
	}
	return nil
}
