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
// "stderr", "display" and "artifact" as the call produces them (data: the
// event as JSON, {"kind","text"|"data"|"artifact"}), then one "result"
// whose data is exactly the body the non-streaming call answers with 200,
// or one "error" whose data is {"status": HTTP status, "error": {...}} as
// the non-streaming call's error body. The stream ends after that event.
// A client that goes away cancels the call; a session call is then
// interrupted and the session lives on. (With an idempotency key see
// streamIdempotent: the call then runs to its end.)
func (s *Server) streamCall(c *gin.Context, call dispatcher.Call) {
	cs := openCallStream(c, call.ID, false)
	s.runStreamed(c.Request.Context(), cs, call)
}

// callStream is the open SSE answer of one tool call.
type callStream struct {
	c     *gin.Context
	rc    *http.ResponseController
	alive bool // false once a write failed: the client is gone
}

// openCallStream writes the event stream's headers (with
// Idempotent-Replayed: true when replayed) and its first comment.
func openCallStream(c *gin.Context, callID string, replayed bool) *callStream {
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if replayed {
		h.Set("Idempotent-Replayed", "true")
	}
	c.Status(http.StatusOK)
	cs := &callStream{c: c, rc: http.NewResponseController(c.Writer), alive: true}
	cs.write(": call " + sanitizeLine(callID) + "\n\n")
	return cs
}

// write sends chunk and flushes it; after a failed write it does nothing.
func (cs *callStream) write(chunk string) {
	if !cs.alive {
		return
	}
	if _, err := cs.c.Writer.WriteString(chunk); err != nil || cs.rc.Flush() != nil {
		cs.alive = false // keep draining: the call still has to end
	}
}

// final writes the last event from a non-streamed answer: status 200 and
// its body as "result", any other status as "error" {"status", "error"}.
func (cs *callStream) final(status int, body []byte) {
	if status == http.StatusOK {
		cs.write("event: result\ndata: " + string(body) + "\n\n")
		return
	}
	var eb struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &eb) != nil || len(eb.Error) == 0 {
		eb.Error = json.RawMessage(`{"code":"internal","message":"unreadable stored answer"}`)
	}
	var code struct {
		Code core.Code `json:"code"`
	}
	if json.Unmarshal(eb.Error, &code) == nil && code.Code != "" {
		cs.c.Set(ctxErrorCode, code.Code)
	}
	cs.write(sseMessage("error", map[string]any{"status": status, "error": eb.Error}))
}

// runStreamed runs call with ctx, writing its live events to cs and then
// its final event, and returns that answer as the non-streaming call would
// have given it (status and JSON body).
func (s *Server) runStreamed(ctx context.Context, cs *callStream, call dispatcher.Call) (int, []byte) {
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
			out, e := s.finishCall(ctx, call, res)
			if e != nil {
				cs.c.Set(ctxErrorCode, e.Code)
				cs.write(sseMessage("error", map[string]any{"status": e.Status, "error": e}))
				body, _ := json.Marshal(errorBody{Error: e})
				return e.Status, body
			}
			body, _ := json.Marshal(out)
			cs.write("event: result\ndata: " + string(body) + "\n\n")
			return http.StatusOK, body
		}
	}
}

// formatCallEvent renders one live event of a call; unknown kinds are
// skipped.
func formatCallEvent(ev core.Event) string {
	switch ev.Kind {
	case "stdout", "stderr", "display", "artifact":
		return sseMessage(ev.Kind, ev)
	}
	return ""
}

// sseMessage renders one SSE message with v as one-line JSON data.
func sseMessage(event string, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		data = []byte(`{"error":{"code":"internal","message":"unencodable event"}}`)
	}
	return fmt.Sprintf("event: %s\ndata: %s\n\n", event, data)
}
