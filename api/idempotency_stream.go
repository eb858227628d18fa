package api

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/idempotency"
	"github.com/airlock-dev/airlock/internal/toolcalls"
)

// streamIdempotent answers a streamed tool call that carries an
// idempotency key (see toolcalls.Service.Once): the request holding the
// key streams the call as streamCall does (with an explicit key it runs
// to its end even if the client goes away, so a retry can collect it); a
// stored answer replays as a stream with Idempotent-Replayed: true and the
// same final event, the live events not repeated; a retry while the first
// runs attaches at once (Idempotent-Replayed: true, heartbeats) and ends
// with its final event, or takes the call over if its replica died. A
// refusal is a JSON error before any stream, an "error" event after.
func (s *Server) streamIdempotent(c *gin.Context, call dispatcher.Call, r idempotency.Request) {
	ctx := c.Request.Context()
	var cs *eventStream
	lastBeat := time.Now()
	a, replayed, err := s.calls.Once(ctx, r, func(claim *idempotency.Claim) toolcalls.Stored {
		call.IdempotencyKey = idempotency.JobKey(claim)
		if cs == nil {
			cs = openCallStream(c, call.ID, false)
		}
		rctx := ctx
		if !claim.Implicit {
			rctx = context.WithoutCancel(ctx) // the client asked to collect it later
		}
		return s.runStreamed(rctx, cs, call)
	}, func() bool {
		if cs == nil {
			cs = openCallStream(c, call.ID, true)
		} else if time.Since(lastBeat) >= s.cfg.Heartbeat {
			cs.write(": ping\n\n")
			lastBeat = time.Now()
		}
		return true
	})
	switch {
	case err != nil && cs == nil:
		abortError(c, idemError(ctx, err, r))
	case err != nil:
		if ctx.Err() == nil {
			cs.fail(idemError(ctx, err, r))
		}
	case replayed:
		if cs == nil {
			cs = openCallStream(c, call.ID, true)
		}
		cs.final(a.Status, a.Body)
	}
}
