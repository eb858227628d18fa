package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/airlock-dev/airlock/wire"
)

// CreateRun starts an agent run (POST /v1/runs); follow it with
// FollowRun or StreamRunEvents, or poll GetRun.
func (c *Client) CreateRun(ctx context.Context, req wire.CreateRunRequest) (*wire.Run, error) {
	r := &request{method: http.MethodPost, path: "/v1/runs"}
	if err := r.jsonBody(req); err != nil {
		return nil, err
	}
	var run wire.Run
	if err := c.doJSON(ctx, r, &run); err != nil {
		return nil, err
	}
	return &run, nil
}

// GetRun returns the state of run id.
func (c *Client) GetRun(ctx context.Context, id string) (*wire.Run, error) {
	var run wire.Run
	if err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/v1/runs/" + seg(id)}, &run); err != nil {
		return nil, err
	}
	return &run, nil
}

// CancelRun cancels run id and returns its state.
func (c *Client) CancelRun(ctx context.Context, id string) (*wire.Run, error) {
	var run wire.Run
	if err := c.doJSON(ctx, &request{method: http.MethodPost, path: "/v1/runs/" + seg(id) + "/cancel"}, &run); err != nil {
		return nil, err
	}
	return &run, nil
}

// DecideApproval approves (or rejects) the pending tool call of run id
// named by token (from Run.PendingApprovals or an approval_needed event).
func (c *Client) DecideApproval(ctx context.Context, id, token string, approve bool, reason string) (*wire.Run, error) {
	r := &request{method: http.MethodPost, path: "/v1/runs/" + seg(id) + "/approvals/" + seg(token)}
	if err := r.jsonBody(wire.ApprovalDecision{Approve: &approve, Reason: reason}); err != nil {
		return nil, err
	}
	var run wire.Run
	if err := c.doJSON(ctx, r, &run); err != nil {
		return nil, err
	}
	return &run, nil
}

// EventStream is one connection to a run's event stream.
type EventStream struct {
	body   io.ReadCloser
	sse    *sseReader
	lastID int64
}

// StreamRunEvents opens one connection to the events of run id, replaying
// the events after sequence number after (0: from the start) and then the
// live ones (GET /v1/runs/{id}/events with Last-Event-ID). The stream ends
// when the run has ended or the server's stream timeout passed; resume
// with another call after LastEventID, or use FollowRun, which does so.
func (c *Client) StreamRunEvents(ctx context.Context, id string, after int64) (*EventStream, error) {
	r := &request{method: http.MethodGet, path: "/v1/runs/" + seg(id) + "/events", header: http.Header{}}
	r.header.Set("Accept", "text/event-stream")
	if after > 0 {
		r.header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	}
	res, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	return &EventStream{body: res.Body, sse: newSSEReader(res.Body), lastID: after}, nil
}

// Next returns the next event; io.EOF when the server ended the stream.
func (s *EventStream) Next() (wire.RunEvent, error) {
	f, err := s.sse.next()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return wire.RunEvent{}, io.EOF
		}
		return wire.RunEvent{}, fmt.Errorf("airlock client: run events: %w", err)
	}
	var ev wire.RunEvent
	if err := json.Unmarshal([]byte(f.Data), &ev); err != nil {
		return wire.RunEvent{}, fmt.Errorf("airlock client: run event %s: %w", f.ID, err)
	}
	if ev.Type == "" {
		ev.Type = wire.EventType(f.Event)
	}
	if int64(ev.Seq) > s.lastID {
		s.lastID = int64(ev.Seq)
	}
	return ev, nil
}

// LastEventID is the sequence number of the last event read (or the
// resume point the stream was opened with).
func (s *EventStream) LastEventID() int64 { return s.lastID }

// Close ends the connection.
func (s *EventStream) Close() error { return s.body.Close() }

// FollowRun calls fn with every event of run id after sequence number
// after, in order and without repeats, until the run has finished. When a
// connection drops or ends early it reconnects and resumes after the last
// event it handed to fn (Last-Event-ID). It returns fn's error, the first
// error of opening a stream, or ctx's error.
func (c *Client) FollowRun(ctx context.Context, id string, after int64, fn func(wire.RunEvent) error) error {
	final := false
	for {
		s, err := c.StreamRunEvents(ctx, id, after)
		if err != nil {
			return err
		}
		finished, err := drain(s, fn)
		after = s.LastEventID()
		_ = s.Close()
		if finished {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, io.EOF) {
			if final {
				// The run was final before this connection and its log
				// is drained: it ended without a run_finished event.
				return nil
			}
			// A clean end without run_finished: the run may have ended,
			// or the stream timed out. The server makes a run's record
			// final just before it appends run_finished, so a final run
			// is read once more for the events after it.
			run, gerr := c.GetRun(ctx, id)
			if gerr != nil {
				return gerr
			}
			final = run.Status.Final()
		}
	}
}

// drain hands the events of s to fn. finished is true when the caller
// must stop: fn failed or the run_finished event was handed over.
func drain(s *EventStream, fn func(wire.RunEvent) error) (finished bool, err error) {
	for {
		ev, err := s.Next()
		if err != nil {
			return false, err
		}
		if err := fn(ev); err != nil {
			return true, err
		}
		if ev.Type == wire.EventRunFinished {
			return true, nil
		}
	}
}
