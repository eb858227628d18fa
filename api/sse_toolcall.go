package api

import (
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
// interrupted and the session lives on.
func (s *Server) streamCall(c *gin.Context, call dispatcher.Call) {
	ctx := c.Request.Context()
	events := make(chan core.Event, callEventBuffer)
	sink := func(ev core.Event) {
		select {
		case events <- ev:
		default:
		}
	}
	done := make(chan dispatcher.Result, 1)
	go func() { done <- s.deps.Dispatcher.Run(core.WithSink(ctx, sink), call) }()

	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	rc := http.NewResponseController(c.Writer)
	alive := true
	write := func(chunk string) {
		if !alive {
			return
		}
		if _, err := c.Writer.WriteString(chunk); err != nil || rc.Flush() != nil {
			alive = false // keep draining: the call still has to end
		}
	}
	write(": call " + sanitizeLine(call.ID) + "\n\n")
	tick := time.NewTicker(s.cfg.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case ev := <-events:
			write(formatCallEvent(ev))
		case <-tick.C:
			write(": ping\n\n")
		case res := <-done:
			for drained := false; !drained; {
				select {
				case ev := <-events:
					write(formatCallEvent(ev))
				default:
					drained = true
				}
			}
			out, e := s.finishCall(ctx, call, res)
			if e != nil {
				c.Set(ctxErrorCode, e.Code)
				write(sseMessage("error", map[string]any{"status": e.Status, "error": e}))
				return
			}
			write(sseMessage("result", out))
			return
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
