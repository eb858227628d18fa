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
// idempotency key, so that a retry never runs the call a second time:
//
//   - the request that holds the key streams the call as streamCall does,
//     and its answer is stored as a non-streamed call's is; with an
//     explicit Idempotency-Key it runs to its end even if the client goes
//     away (bounded by the call's own timeout), so a retry can collect it
//     (a key derived from the call id keeps cancel-on-disconnect);
//   - a stored answer is replayed as a stream with Idempotent-Replayed:
//     true, the same final "result" or "error" event; the live events are
//     not repeated;
//   - while the first request still runs (on any replica) the retry
//     attaches to it: its stream opens at once (Idempotent-Replayed:
//     true), carries heartbeats and ends with the first request's final
//     event as soon as it is stored. If the replica running the call dies,
//     its reservation lapses within idempotency.Lease and the retry takes
//     the call over (the same job).
//
// The key used with another request is 409 and an unreachable store 503,
// as JSON errors, before any stream; as an "error" event after.
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
