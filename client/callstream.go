package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/wire"
)

// CallStream is a tool call streamed as Server-Sent Events: Next returns
// its output events (wire.CallEvent: stdout, stderr, display and artifact,
// the kinds of core.Event) as they come, then io.EOF once the final answer
// has arrived, which Result returns. The final answer carries the complete
// output; events are for watching it happen (the server drops some for a
// slow reader). Close it when done.
type CallStream struct {
	body         io.ReadCloser
	sse          *sseReader
	method, path string
	res          *wire.ToolCallResponse
	err          error // sticky: the end of the stream (io.EOF) or its failure
}

// CallToolStream runs one tool call in a fresh sandbox like CallTool, but
// streams it (POST /v1/tool-calls with Accept: text/event-stream). A
// request the server refuses before the call starts is an *APIError here;
// a platform failure during the call is an *APIError from Next or Result.
// Cancelling ctx (or closing the stream) cancels the call.
func (c *Client) CallToolStream(ctx context.Context, call ToolCall) (*CallStream, error) {
	return c.callToolStream(ctx, "/v1/tool-calls", call)
}

// CallSessionToolStream runs one tool call in session id like
// CallSessionTool, but streams it (POST /v1/sessions/{id}/tool-calls with
// Accept: text/event-stream). Ending the stream early interrupts the
// call; the session lives on.
func (c *Client) CallSessionToolStream(ctx context.Context, id string, call ToolCall) (*CallStream, error) {
	if id == "" {
		return nil, fmt.Errorf("airlock client: CallSessionToolStream: empty session id")
	}
	return c.callToolStream(ctx, "/v1/sessions/"+seg(id)+"/tool-calls", call)
}

// callToolStream posts call to path asking for an event stream.
func (c *Client) callToolStream(ctx context.Context, path string, call ToolCall) (*CallStream, error) {
	r, err := toolCallRequest(path, call)
	if err != nil {
		return nil, err
	}
	r.header = http.Header{"Accept": {"text/event-stream"}}
	res, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	s := &CallStream{body: res.Body, sse: newSSEReader(res.Body), method: r.method, path: r.path}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt == "application/json" {
		// A server that answered without streaming: the answer is the result.
		var out wire.ToolCallResponse
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
			s.err = fmt.Errorf("airlock client: %s %s: decode answer: %w", r.method, r.path, err)
		} else {
			s.res, s.err = &out, io.EOF
		}
	}
	return s, nil
}

// Next returns the next output event. After the last one it returns
// io.EOF, and Result has the answer; a platform failure the server
// reported instead of a result is an *APIError; a stream that broke
// before its end is an error wrapping io.ErrUnexpectedEOF.
func (s *CallStream) Next() (wire.CallEvent, error) {
	for s.err == nil {
		f, err := s.sse.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // the stream ends only after result or error
			}
			s.err = fmt.Errorf("airlock client: %s %s: event stream ended before the result: %w", s.method, s.path, err)
			break
		}
		switch f.Event {
		case core.EventStdout, core.EventStderr, core.EventDisplay, core.EventArtifact:
			var ev wire.CallEvent
			if err := json.Unmarshal([]byte(f.Data), &ev); err != nil {
				s.err = fmt.Errorf("airlock client: %s %s: %s event: %w", s.method, s.path, f.Event, err)
				break
			}
			ev.Kind = f.Event
			return ev, nil
		case "result":
			var out wire.ToolCallResponse
			if err := json.Unmarshal([]byte(f.Data), &out); err != nil {
				s.err = fmt.Errorf("airlock client: %s %s: result event: %w", s.method, s.path, err)
				break
			}
			s.res, s.err = &out, io.EOF
		case "error":
			s.err = s.streamError(f.Data)
		}
		// other event types are newer than this client: skipped
	}
	return wire.CallEvent{}, s.err
}

// Result reads the stream to its end, discarding events not yet read,
// and returns the call's answer: the same body the non-streaming call
// answers with. Its errors are those of Next.
func (s *CallStream) Result() (*wire.ToolCallResponse, error) {
	for {
		if _, err := s.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return s.res, nil
			}
			return nil, err
		}
	}
}

// Close ends the connection; a call still running is cancelled.
func (s *CallStream) Close() error { return s.body.Close() }

// streamError decodes the data of an "error" event (a
// wire.CallStreamError) into an *APIError.
func (s *CallStream) streamError(data string) error {
	var body wire.CallStreamError
	if err := json.Unmarshal([]byte(data), &body); err != nil || body.Error == nil {
		return fmt.Errorf("airlock client: %s %s: undecodable error event %q", s.method, s.path, truncate(data, 200))
	}
	return &APIError{errorObject: *body.Error, StatusCode: body.Status, Method: s.method, Path: s.path}
}

// truncate cuts s to n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
