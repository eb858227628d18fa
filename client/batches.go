package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/airlock-dev/airlock/wire"
)

// BatchOptions are the query options of CreateBatch.
type BatchOptions struct {
	Concurrency      int
	CompletionWindow string
	// Environment is the batch's environment, the default of its items
	// that name none.
	Environment string
}

func (o BatchOptions) query() url.Values {
	q := url.Values{}
	if o.Concurrency > 0 {
		q.Set("concurrency", strconv.Itoa(o.Concurrency))
	}
	if o.CompletionWindow != "" {
		q.Set("completion_window", o.CompletionWindow)
	}
	if o.Environment != "" {
		q.Set("environment", o.Environment)
	}
	return q
}

// CreateBatch submits JSONL items (POST /v1/batches).
func (c *Client) CreateBatch(ctx context.Context, jsonl []byte, opt BatchOptions) (*wire.Batch, error) {
	r := &request{method: http.MethodPost, path: "/v1/batches", query: opt.query(), body: bytes.NewReader(jsonl), contentType: "application/jsonl"}
	var b wire.Batch
	if err := c.doJSON(ctx, r, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// CreateMapBatch submits a map spec (POST /v1/batches): one tool call
// template run once per folder matched by spec.Each under input folder
// spec.Input.
func (c *Client) CreateMapBatch(ctx context.Context, spec wire.BatchMapSpec) (*wire.Batch, error) {
	r := &request{method: http.MethodPost, path: "/v1/batches"}
	if err := r.jsonBody(spec); err != nil {
		return nil, err
	}
	var b wire.Batch
	if err := c.doJSON(ctx, r, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// GetBatch returns batch id.
func (c *Client) GetBatch(ctx context.Context, id string) (*wire.Batch, error) {
	var b wire.Batch
	if err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/v1/batches/" + seg(id)}, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// ListBatches returns the caller's batches, newest first.
func (c *Client) ListBatches(ctx context.Context) ([]wire.Batch, error) {
	var out wire.BatchList
	if err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/v1/batches"}, &out); err != nil {
		return nil, err
	}
	return out.Data, nil
}

// CancelBatch cancels batch id.
func (c *Client) CancelBatch(ctx context.Context, id string) (*wire.Batch, error) {
	var b wire.Batch
	if err := c.doJSON(ctx, &request{method: http.MethodPost, path: "/v1/batches/" + seg(id) + "/cancel"}, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// RetryBatch reruns the failed items of batch id.
func (c *Client) RetryBatch(ctx context.Context, id string) (*wire.Batch, error) {
	var b wire.Batch
	if err := c.doJSON(ctx, &request{method: http.MethodPost, path: "/v1/batches/" + seg(id) + "/retry"}, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// BatchResults copies the raw JSONL results of batch id to w (errorsOnly:
// the errors view).
func (c *Client) BatchResults(ctx context.Context, id string, errorsOnly bool, w io.Writer) error {
	path := "/v1/batches/" + seg(id) + "/results"
	if errorsOnly {
		path = "/v1/batches/" + seg(id) + "/errors"
	}
	res, err := c.send(ctx, &request{method: http.MethodGet, path: path})
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if _, err := io.Copy(w, res.Body); err != nil {
		return fmt.Errorf("airlock client: read results of %s: %w", id, err)
	}
	return nil
}

// BatchLines returns the parsed results of batch id.
func (c *Client) BatchLines(ctx context.Context, id string) ([]wire.BatchLine, error) {
	var buf bytes.Buffer
	if err := c.BatchResults(ctx, id, false, &buf); err != nil {
		return nil, err
	}
	var out []wire.BatchLine
	sc := bufio.NewScanner(&buf)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var l wire.BatchLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("airlock client: bad result line: %w", err)
		}
		out = append(out, l)
	}
	return out, sc.Err()
}
