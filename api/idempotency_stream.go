package api

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/dispatcher"
)

// streamIdempotent answers a streamed tool call that carries an
// idempotency key (the Idempotency-Key header, or the call id with the
// body's hash), so that a retry never runs the call a second time:
//
//   - a new key: the call streams as streamCall's does and its answer is
//     stored under the key as a non-streamed call's is; with an explicit
//     Idempotency-Key header it runs to its end even if the client goes
//     away (bounded by the call's own timeout), so a retry can collect it
//     (a key derived from the call id keeps cancel-on-disconnect);
//   - the first request finished (on any replica): its answer is replayed
//     as a stream with Idempotent-Replayed: true, the same final "result"
//     or "error" event; the live events are not repeated;
//   - the first request is still running (on any replica): the retry
//     attaches to it: its stream opens at once (Idempotent-Replayed: true),
//     carries heartbeats and ends with the first request's final event as
//     soon as it is stored. If the replica running the call dies, its
//     reservation lapses within idemLease and the retry takes the call over
//     with the same dispatcher.Call.IdempotencyKey (the same job).
//
// The key used with another request is 409 and an unreachable store 503,
// as JSON errors, before any stream.
func (s *Server) streamIdempotent(c *gin.Context, call dispatcher.Call, key, fp string) {
	ctx := c.Request.Context()
	run, ver, rec, e := s.idemReserve(ctx, call.Owner, key, fp)
	switch {
	case e != nil:
		abortError(c, e)
	case run:
		s.runIdempotent(openCallStream(c, call.ID, false), call, key, fp, ver)
	case rec.Done:
		openCallStream(c, call.ID, true).final(rec.Status, rec.Body)
	default:
		s.attachStream(ctx, openCallStream(c, call.ID, true), call, key, fp)
	}
}

// runIdempotent runs call on cs holding the reservation of key (renewed
// while it runs) and stores its answer.
func (s *Server) runIdempotent(cs *callStream, call dispatcher.Call, key, fp string, version int64) {
	stop := s.idemHold(call.Owner, key, fp, version)
	ctx := cs.c.Request.Context()
	if cs.c.GetHeader("Idempotency-Key") != "" {
		ctx = context.WithoutCancel(ctx) // the client asked to collect it later
	}
	status, body := s.runStreamed(ctx, cs, call)
	stop()
	s.idemFinish(call.Owner, key, fp, status, body, notRunStatus(status))
}

// attachStream waits on cs for the answer of the request running key,
// with heartbeats, and writes its final event; when that request's
// reservation lapses (its replica died) it takes the call over.
func (s *Server) attachStream(ctx context.Context, cs *callStream, call dispatcher.Call, key, fp string) {
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
		rec, found, e := s.idemPeek(ctx, call.Owner, key, fp)
		if e == nil && !found {
			var run bool
			var ver int64
			if run, ver, rec, e = s.idemReserve(ctx, call.Owner, key, fp); e == nil && run {
				s.runIdempotent(cs, call, key, fp, ver)
				return
			}
		}
		switch {
		case e != nil:
			cs.c.Set(ctxErrorCode, e.Code)
			cs.write(sseMessage("error", map[string]any{"status": e.Status, "error": e}))
			return
		case rec.Done:
			cs.final(rec.Status, rec.Body)
			return
		}
	}
}
