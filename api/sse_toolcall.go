package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/toolcalls"
	"github.com/airlock-dev/airlock/wire"
)

// callEventBuffer is how many live events wait for a slow client; past it
// events are dropped (the result event still carries everything).
const callEventBuffer = 256

// wantsStream reports a tool call that asked to be streamed: Accept:
// text/event-stream, or ?stream=true (or 1).
func wantsStream(c *gin.Context) bool {
	switch strings.ToLower(c.Query("stream")) {
	case "true", "1":
		return true
	}
	return strings.Contains(strings.ToLower(c.GetHeader("Accept")), "text/event-stream")
}

// streamCall runs call and answers with Server-Sent Events: "stdout",
// "stderr", "display" and "artifact" as the call produces them (data: a
// wire.CallEvent), then one "result" whose data is exactly the body the
// non-streaming call answers with 200, or one "error" whose data is a
// wire.CallStreamError, the non-streaming call's status and error. The
// stream ends after that event. A client that goes away cancels the call;
// a session call is then interrupted and the session lives on. (With an
// idempotency key see streamIdempotent: the call then runs to its end.)
func (s *Server) streamCall(c *gin.Context, call dispatcher.Call) {
	cs := openCallStream(c, call.ID, false)
	s.runStreamed(c.Request.Context(), cs, call)
}

// openCallStream starts a tool call's event stream (Idempotent-Replayed:
// true when replayed) with its first comment.
func openCallStream(c *gin.Context, callID string, replayed bool) *eventStream {
	cs := openStream(c, replayed, 0)
	cs.write(": call " + sanitizeLine(callID) + "\n\n")
	return cs
}

// fail writes the final "error" event of e.
func (cs *eventStream) fail(e *Error) {
	cs.c.Set(ctxErrorCode, e.Code)
	cs.write(sseMessage("error", wire.CallStreamError{Status: e.Status, Error: &e.errorObject}))
}

// final writes the last event from a stored answer: status 200 and its
// body as "result", any other status as "error".
func (cs *eventStream) final(status int, body []byte) {
	if status == http.StatusOK {
		cs.write("event: result\ndata: " + string(body) + "\n\n")
		return
	}
	var eb wire.ErrorBody
	if json.Unmarshal(body, &eb) != nil || eb.Error == nil {
		eb.Error = &wire.Error{Code: core.ErrInternal, Message: "unreadable stored answer"}
	}
	cs.fail(&Error{errorObject: *eb.Error, Status: status})
}

// runStreamed runs call with ctx, writing its live events to cs and then
// its final event, and returns that answer as the non-streaming call would
// have given it.
func (s *Server) runStreamed(ctx context.Context, cs *eventStream, call dispatcher.Call) toolcalls.Stored {
	events := make(chan core.Event, callEventBuffer)
	sink := func(ev core.Event) {
		select {
		case events <- ev:
		default:
		}
	}
	done := make(chan dispatcher.Result, 1)
	go func() { done <- s.deps.Dispatcher.Run(core.WithSink(ctx, sink), call) }()
	tick := time.NewTicker(s.cfg.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case ev := <-events:
			cs.write(formatCallEvent(ev))
		case <-tick.C:
			cs.write(": ping\n\n")
		case res := <-done:
			for drained := false; !drained; {
				select {
				case ev := <-events:
					cs.write(formatCallEvent(ev))
				default:
					drained = true
				}
			}
			a := encodeAnswer(s.finishCall(ctx, call, res))
			cs.final(a.Status, a.Body)
			return a
		}
	}
}

// formatCallEvent renders one live event of a call; unknown kinds are
// skipped. An artifact event names the file, never its bytes.
func formatCallEvent(ev core.Event) string {
	out := wire.CallEvent{Kind: ev.Kind, Text: ev.Text, Data: ev.Data}
	switch ev.Kind {
	case core.EventStdout, core.EventStderr, core.EventDisplay, core.EventBuilding:
	case core.EventArtifact:
		if a := ev.Artifact; a != nil {
			out.Artifact = &wire.Artifact{Name: a.Name, MIME: a.MIME, Size: a.Size, SHA256: a.SHA256}
		}
	default:
		return ""
	}
	return sseMessage(ev.Kind, out)
}

// sseMessage renders one SSE message with v as one-line JSON data.
func sseMessage(event string, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		data = []byte(`{"error":{"code":"internal","message":"unencodable event"}}`)
	}
	return fmt.Sprintf("event: %s\ndata: %s\n\n", event, data)
}
