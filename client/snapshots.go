package client

import (
	"context"
	"fmt"
	"net/http"

	"github.com/airlock-dev/airlock/wire"
)

// SnapshotSession snapshots session id (POST /v1/sessions/{id}/snapshot):
// its Python namespace (serialized inside its own sandbox), its work
// folder and call log. Skipped names the values that could not be saved
// (open files, generators, ...). Past the key's quota it is an *APIError
// with core.ErrQuota.
func (c *Client) SnapshotSession(ctx context.Context, id string) (*wire.SnapshotCreated, error) {
	if id == "" {
		return nil, fmt.Errorf("airlock client: SnapshotSession: empty session id")
	}
	var out wire.SnapshotCreated
	if err := c.doJSON(ctx, &request{method: http.MethodPost, path: "/v1/sessions/" + seg(id) + "/snapshot"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListSnapshots returns the caller's snapshots (GET /v1/snapshots).
func (c *Client) ListSnapshots(ctx context.Context) ([]wire.Snapshot, error) {
	var out wire.SnapshotList
	if err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/v1/snapshots"}, &out); err != nil {
		return nil, err
	}
	return out.Snapshots, nil
}

// GetSnapshot returns snapshot id (GET /v1/snapshots/{id}).
func (c *Client) GetSnapshot(ctx context.Context, id string) (*wire.Snapshot, error) {
	var out wire.Snapshot
	if err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/v1/snapshots/" + seg(id)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteSnapshot deletes snapshot id (DELETE /v1/snapshots/{id}).
func (c *Client) DeleteSnapshot(ctx context.Context, id string) error {
	return c.doJSON(ctx, &request{method: http.MethodDelete, path: "/v1/snapshots/" + seg(id)}, nil)
}

// RestoreSession opens a new session from snapshot snapID (POST
// /v1/sessions with "snapshot"); mode is wire.RestoreNamespace ("" too)
// or wire.RestoreReplay. The answer's Restored reports what was loaded
// and what is missing.
func (c *Client) RestoreSession(ctx context.Context, snapID, mode string) (*wire.Session, error) {
	if snapID == "" {
		return nil, fmt.Errorf("airlock client: RestoreSession: empty snapshot id")
	}
	return c.CreateSessionWith(ctx, wire.CreateSessionRequest{Snapshot: snapID, Restore: mode})
}

// ForkSession opens a new session with session id's state (POST
// /v1/sessions/{id}/fork); the two are independent afterwards.
func (c *Client) ForkSession(ctx context.Context, id string) (*wire.Session, error) {
	if id == "" {
		return nil, fmt.Errorf("airlock client: ForkSession: empty session id")
	}
	var s wire.Session
	if err := c.doJSON(ctx, &request{method: http.MethodPost, path: "/v1/sessions/" + seg(id) + "/fork"}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// ExportNotebook returns session id's call log with its outputs as an
// nbformat 4 notebook (GET /v1/sessions/{id}/notebook.ipynb).
func (c *Client) ExportNotebook(ctx context.Context, id string) ([]byte, error) {
	if id == "" {
		return nil, fmt.Errorf("airlock client: ExportNotebook: empty session id")
	}
	d, err := c.doBytes(ctx, &request{method: http.MethodGet, path: "/v1/sessions/" + seg(id) + "/notebook.ipynb"})
	if err != nil {
		return nil, err
	}
	return d.Data, nil
}
