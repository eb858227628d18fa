package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/wire"
)

// runEvents answers GET /v1/runs/{id}/events as Server-Sent Events. Each
// event is "id: SEQ", "event: TYPE" and "data: " the agent.Event as JSON.
// A client resumes after the last id it saw with the Last-Event-ID header
// (or ?after=N, for clients that cannot set headers). The stream ends when
// the run has ended, after Config.StreamTimeout, or at server shutdown.
func (s *Server) runEvents(c *gin.Context) {
	if !s.needRuns(c, false) {
		return
	}
	after, err := resumePoint(c)
	if err != nil {
		fail(c, err)
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.StreamTimeout)
	defer cancel()
	who := owner(c)
	events, err := s.deps.Runs.Events(ctx, who, c.Param("id"), after)
	if err != nil {
		fail(c, s.runError(err))
		return
	}
	write, ok := s.openEventStream(c)
	if !ok {
		return
	}
	tick := time.NewTicker(s.cfg.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			if !write(formatEvent(s.eventArtifacts(ctx, who, ev))) {
				return
			}
		case <-tick.C:
			if !write(": ping\n\n") {
				return
			}
		case <-ctx.Done():
			return
		case <-s.draining:
			return
		}
	}
}

// resumePoint reads Last-Event-ID (or the after query parameter).
func resumePoint(c *gin.Context) (int, error) {
	v := strings.TrimSpace(c.GetHeader("Last-Event-ID"))
	if v == "" {
		v = c.Query("after")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, newError(core.ErrInvalid, "Last-Event-ID must be a non-negative event sequence number")
	}
	return n, nil
}

// formatEvent renders one SSE message. JSON has no raw newlines, so the
// data fits one line.
func formatEvent(ev wire.RunEvent) string {
	data, err := json.Marshal(ev)
	if err != nil {
		data = []byte(`{"seq":` + strconv.Itoa(ev.Seq) + `,"type":"error","data":{"message":"unencodable event"}}`)
	}
	return fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, sanitizeLine(string(ev.Type)), data)
}

// sanitizeLine keeps a field value on one line.
func sanitizeLine(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}

// openEventStream starts a text/event-stream answer (no caching, no proxy
// buffering) and sends the reconnect hint. write sends one chunk and
// flushes it, with a write deadline of a heartbeat plus 30 s; it reports
// false once the client is gone. ok is false when even the hint failed.
func (s *Server) openEventStream(c *gin.Context) (write func(chunk string) bool, ok bool) {
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	rc := http.NewResponseController(c.Writer)
	write = func(chunk string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.Heartbeat + 30*time.Second))
		if _, err := c.Writer.WriteString(chunk); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	return write, write("retry: 2000\n\n")
}
