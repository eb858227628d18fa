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
)

// BatchCounts are a batch's request counts.
type BatchCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

// Batch is a batch as the API answers it.
type Batch struct {
	ID               string          `json:"id"`
	Object           string          `json:"object"`
	Status           string          `json:"status"`
	RequestCounts    BatchCounts     `json:"request_counts"`
	CreatedAt        int64           `json:"created_at"`
	InProgressAt     int64           `json:"in_progress_at,omitempty"`
	FinalizingAt     int64           `json:"finalizing_at,omitempty"`
	CompletedAt      int64           `json:"completed_at,omitempty"`
	CancelledAt      int64           `json:"cancelled_at,omitempty"`
	ExpiresAt        int64           `json:"expires_at"`
	CompletionWindow string          `json:"completion_window"`
	Concurrency      int             `json:"concurrency"`
	Errors           json.RawMessage `json:"errors,omitempty"`
}

// Terminal reports whether the batch has ended.
func (b *Batch) Terminal() bool {
	switch b.Status {
	case "completed", "failed", "cancelled", "expired":
		return true
	}
	return false
}

// BatchLine is one line of a batch's results.
type BatchLine struct {
	CustomID    string          `json:"custom_id"`
	Status      string          `json:"status"`
	ExitCode    *int            `json:"exit_code,omitempty"`
	Stdout      string          `json:"stdout"`
	Stderr      string          `json:"stderr"`
	Truncated   bool            `json:"truncated,omitempty"`
	Message     string          `json:"message,omitempty"`
	Artifacts   json.RawMessage `json:"artifacts,omitempty"`
	RunID       string          `json:"run_id,omitempty"`
	FinalAnswer string          `json:"final_answer,omitempty"`
	Error       json.RawMessage `json:"error,omitempty"`
	DurationMS  int64           `json:"duration_ms"`
	Attempt     int             `json:"attempt"`
}

// BatchOptions are the query options of CreateBatch.
type BatchOptions struct {
	Concurrency      int
	CompletionWindow string
}

func (o BatchOptions) query() url.Values {
	q := url.Values{}
	if o.Concurrency > 0 {
		q.Set("concurrency", strconv.Itoa(o.Concurrency))
	}
	if o.CompletionWindow != "" {
		q.Set("completion_window", o.CompletionWindow)
	}
	return q
}

// CreateBatch submits JSONL items (POST /v1/batches).
func (c *Client) CreateBatch(ctx context.Context, jsonl []byte, opt BatchOptions) (*Batch, error) {
	r := &request{method: http.MethodPost, path: "/v1/batches", query: opt.query(), body: bytes.NewReader(jsonl), contentType: "application/jsonl"}
	var b Batch
	if err := c.doJSON(ctx, r, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// MapSpec is a map batch: one tool call template run once per folder
// matched by Each under input folder Input.
type MapSpec struct {
	ToolCall         any    `json:"tool_call"`
	Each             string `json:"each"`
	Input            string `json:"input"`
	Concurrency      int    `json:"concurrency,omitempty"`
	CompletionWindow string `json:"completion_window,omitempty"`
}

// CreateMapBatch submits a map spec (POST /v1/batches).
func (c *Client) CreateMapBatch(ctx context.Context, spec MapSpec) (*Batch, error) {
	r := &request{method: http.MethodPost, path: "/v1/batches"}
	if err := r.jsonBody(spec); err != nil {
		return nil, err
	}
	var b Batch
	if err := c.doJSON(ctx, r, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// GetBatch returns batch id.
func (c *Client) GetBatch(ctx context.Context, id string) (*Batch, error) {
	var b Batch
	if err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/v1/batches/" + seg(id)}, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// ListBatches returns the caller's batches, newest first.
func (c *Client) ListBatches(ctx context.Context) ([]Batch, error) {
	var out struct {
		Data []Batch `json:"data"`
	}
	if err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/v1/batches"}, &out); err != nil {
		return nil, err
	}
	return out.Data, nil
}

// CancelBatch cancels batch id.
func (c *Client) CancelBatch(ctx context.Context, id string) (*Batch, error) {
	var b Batch
	if err := c.doJSON(ctx, &request{method: http.MethodPost, path: "/v1/batches/" + seg(id) + "/cancel"}, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// RetryBatch reruns the failed items of batch id.
func (c *Client) RetryBatch(ctx context.Context, id string) (*Batch, error) {
	var b Batch
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
func (c *Client) BatchLines(ctx context.Context, id string) ([]BatchLine, error) {
	var buf bytes.Buffer
	if err := c.BatchResults(ctx, id, false, &buf); err != nil {
		return nil, err
	}
	var out []BatchLine
	sc := bufio.NewScanner(&buf)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var l BatchLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("airlock client: bad result line: %w", err)
		}
		out = append(out, l)
	}
	return out, sc.Err()
}
