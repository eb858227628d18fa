package api

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/idempotency"
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
// as JSON errors, before any stream.
func (s *Server) streamIdempotent(c *gin.Context, call dispatcher.Call, r idempotency.Request) {
	ctx := c.Request.Context()
	step, e := s.idemNext(ctx, r, nil)
	switch {
	case e != nil:
		abortError(c, e)
	case step.Claim != nil:
		s.runStreamedClaim(openCallStream(c, call.ID, false), call, step.Claim)
	case step.Answer != nil:
		openCallStream(c, call.ID, true).final(step.Answer.Status, step.Answer.Body)
	default:
		s.attachStream(ctx, openCallStream(c, call.ID, true), call, r, []string{step.Waiting})
	}
}

// runStreamedClaim runs call on cs holding claim (renewed while it runs)
// and stores its answer.
func (s *Server) runStreamedClaim(cs *callStream, call dispatcher.Call, claim *idempotency.Claim) {
	call.IdempotencyKey = idempotency.JobKey(claim)
	stop := s.idem.Hold(claim)
	ctx := cs.c.Request.Context()
	if !claim.Implicit {
		ctx = context.WithoutCancel(ctx) // the client asked to collect it later
	}
	a := s.runStreamed(ctx, cs, call)
	stop()
	s.idemFinish(ctx, claim, a)
}

// attachStream waits on cs for the answer of the request running r's
// call (seen names its tokens), with heartbeats, and writes its final
// event; when that request's reservation lapses it takes the call over.
func (s *Server) attachStream(ctx context.Context, cs *callStream, call dispatcher.Call, r idempotency.Request, seen []string) {
	poll := time.NewTicker(idemPoll)
	defer poll.Stop()
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return // this client went away; the call runs on where it runs
		case <-beat.C:
			cs.write(": ping\n\n")
			continue
		case <-poll.C:
		}
		step, e := s.idemNext(ctx, r, seen)
		switch {
		case e != nil:
			cs.fail(e)
			return
		case step.Claim != nil:
			s.runStreamedClaim(cs, call, step.Claim)
			return
		case step.Answer != nil:
			cs.final(step.Answer.Status, step.Answer.Body)
			return
		}
		seen = appendNew(seen, step.Waiting)
	}
}
