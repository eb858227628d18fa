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
// event is "id: SEQ", "event: TYPE" and "data: " the wire.RunEvent as JSON.
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
	events, err := s.deps.Runs.Events(ctx, who, c.Param("id"), int(after))
	if err != nil {
		fail(c, s.runError(err))
		return
	}
	es := s.openEventStream(c)
	if !es.alive {
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
			if !es.write(formatEvent(s.calls.EventArtifacts(ctx, who, ev))) {
				return
			}
		case <-tick.C:
			if !es.write(": ping\n\n") {
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
func resumePoint(c *gin.Context) (int64, error) {
	v := strings.TrimSpace(c.GetHeader("Last-Event-ID"))
	if v == "" {
		v = c.Query("after")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
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

// eventStream is an open text/event-stream answer.
type eventStream struct {
	c     *gin.Context
	rc    *http.ResponseController
	wait  time.Duration // the write deadline of each chunk; 0: the route's
	alive bool          // false once a write failed: the client is gone
}

// openStream starts a text/event-stream answer (no caching, no proxy
// buffering; Idempotent-Replayed: true when replayed) whose writes each
// have wait (0: the route's deadline) to go through.
func openStream(c *gin.Context, replayed bool, wait time.Duration) *eventStream {
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if replayed {
		h.Set("Idempotent-Replayed", "true")
	}
	c.Status(http.StatusOK)
	return &eventStream{c: c, rc: http.NewResponseController(c.Writer), wait: wait, alive: true}
}

// write sends chunk and flushes it, and reports whether the client is
// still there; after a failed write it does nothing.
func (es *eventStream) write(chunk string) bool {
	if !es.alive {
		return false
	}
	if es.wait > 0 {
		_ = es.rc.SetWriteDeadline(time.Now().Add(es.wait))
	}
	if _, err := es.c.Writer.WriteString(chunk); err != nil || es.rc.Flush() != nil {
		es.alive = false
	}
	return es.alive
}

// openEventStream starts the event stream of a run or a batch, each write
// bounded by a heartbeat plus 30 s, with the reconnect hint (alive is
// false when even that failed).
func (s *Server) openEventStream(c *gin.Context) *eventStream {
	es := openStream(c, false, s.cfg.Heartbeat+30*time.Second)
	es.write("retry: 2000\n\n")
	return es
}
