package api

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/wire"
)

// batchEvents answers GET /v1/batches/{id}/events as Server-Sent Events,
// with dense ids (the events log's Seq): "event: progress" with the batch
// as JSON when its counts or status change, and "event: item" with a
// batch.ItemEvent (custom_id, status, duration_ms, attempt) per finished
// item, until the batch has ended ("event: done"). Last-Event-ID (or
// ?after=N) resumes after that id.
func (s *Server) batchEvents(c *gin.Context) {
	if !s.needBatches(c) {
		return
	}
	after, err := resumePoint(c)
	if err != nil {
		fail(c, err)
		return
	}
	who, id := owner(c), c.Param("id")
	b, err := s.batches.Get(c.Request.Context(), who, id)
	if err != nil {
		fail(c, err)
		return
	}
	out := s.openEventStream(c)
	if !out.alive {
		return
	}
	ctx := c.Request.Context()
	deadline := time.Now().Add(s.cfg.StreamTimeout)
	ended := b.Status.Terminal()
	for time.Now().Before(deadline) {
		select {
		case <-s.draining:
			return
		default:
		}
		wait := min(s.cfg.Heartbeat, 5*time.Second)
		if ended {
			wait = 0 // drain what is logged, then end
		}
		es, err := s.batches.Events(ctx, who, id, after, wait)
		if err != nil || ctx.Err() != nil {
			return
		}
		if len(es) == 0 {
			if ended {
				_ = out.write("event: done\ndata: {}\n\n")
				return
			}
			if b, err := s.batches.Get(ctx, who, id); err == nil && b.Status.Terminal() {
				ended = true
				continue
			}
			if !out.write(": ping\n\n") {
				return
			}
			continue
		}
		for _, e := range es {
			after = e.Seq
			var snap struct {
				Object string           `json:"object"`
				Status wire.BatchStatus `json:"status"`
			}
			_ = json.Unmarshal(e.Data, &snap)
			kind := "progress"
			if snap.Object == wire.BatchItemEventObject {
				kind = "item"
			}
			if !out.write(fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", e.Seq, kind, e.Data)) {
				return
			}
			if kind == "progress" && snap.Status.Terminal() {
				ended = true
			}
		}
	}
}
