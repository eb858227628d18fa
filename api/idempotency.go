package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/idempotency"
	"github.com/airlock-dev/airlock/wire"
)

// maxIdempotencyKey bounds an Idempotency-Key header in bytes.
const maxIdempotencyKey = 200

// idemPoll is how often a request waiting for another's answer asks again.
const idemPoll = 50 * time.Millisecond

// idemRequest is the idempotency request of a tool call: the
// Idempotency-Key header (explicit), else the call's id with a hash of its
// body (implicit: it protects a duplicate sent while the first runs, see
// api/README.md), else none (Key ""). An over-long key is answered 400.
func (s *Server) idemRequest(c *gin.Context, req wire.ToolCallRequest) (idempotency.Request, bool) {
	b, _ := json.Marshal(req)
	sum := sha256.Sum256(b)
	r := idempotency.Request{Owner: owner(c), Key: c.GetHeader("Idempotency-Key"), Fingerprint: hex.EncodeToString(sum[:])}
	if len(r.Key) > maxIdempotencyKey {
		abortError(c, newError(core.ErrInvalid, fmt.Sprintf("Idempotency-Key is %d bytes, over the limit of %d", len(r.Key), maxIdempotencyKey)))
		return r, false
	}
	if r.Key == "" && req.ID != "" {
		// The client's call id (a generated one is never retried); clients
		// reuse ids across different calls, so the body is part of the key.
		r.Key, r.Implicit = "call:"+req.ID+":"+r.Fingerprint[:16], true
	}
	return r, true
}

// idemNext is the next step of request r (toolcalls.Service.Next), its
// error as the answer.
func (s *Server) idemNext(ctx context.Context, r idempotency.Request, seen []string) (idempotency.Step, *Error) {
	step, err := s.calls.Next(ctx, r, seen)
	if err != nil {
		return step, idemError(err, r)
	}
	return step, nil
}

// idemError is the answer of a failed idempotency step: 409 for the key
// used with another request, 503 when the state store cannot be reached
// (the call did not run).
func idemError(err error, r idempotency.Request) *Error {
	if errors.Is(err, core.ErrUnavailable) {
		return newError(core.ErrUnavailable, "the state store is unavailable; the call was not run, retry later")
	}
	e := toError(nil, err)
	if e.Code == core.ErrBusy {
		e.Message = "the call with idempotency key " + r.Key + " is changing hands; retry"
	}
	return e
}

// runIdempotent answers a non-streamed tool call with an idempotency key:
// it runs the call holding the key, replays the stored answer
// (Idempotent-Replayed: true), or waits for the request running it and
// replays its answer, taking the call over when that request's replica
// dies.
func (s *Server) runIdempotent(c *gin.Context, call dispatcher.Call, r idempotency.Request) {
	ctx := c.Request.Context()
	var seen []string
	for {
		step, e := s.idemNext(ctx, r, seen)
		switch {
		case e != nil:
			abortError(c, e)
			return
		case step.Claim != nil:
			call.IdempotencyKey = idempotency.JobKey(step.Claim)
			stop := s.idem.Hold(step.Claim)
			out, e := s.finishCall(ctx, call, s.deps.Dispatcher.Run(ctx, call))
			stop()
			s.idemFinish(ctx, step.Claim, encodeAnswer(out, e))
			answer(c, out, e)
			return
		case step.Answer != nil:
			c.Header("Idempotent-Replayed", "true")
			c.Data(step.Answer.Status, "application/json; charset=utf-8", step.Answer.Body)
			return
		}
		seen = appendNew(seen, step.Waiting)
		select {
		case <-ctx.Done():
			abortError(c, newError(core.ErrUnavailable, "the call with idempotency key "+r.Key+" is still running; retry later"))
			return
		case <-time.After(idemPoll):
		}
	}
}

// appendNew appends token to seen unless it is its last element.
func appendNew(seen []string, token string) []string {
	if len(seen) > 0 && seen[len(seen)-1] == token {
		return seen
	}
	return append(seen, token)
}

// storedAnswer is an answer as an idempotency key keeps it.
type storedAnswer struct {
	status int
	body   []byte
}

// encodeAnswer is the stored form of a tool call's answer.
func encodeAnswer(out wire.ToolCallResponse, e *Error) storedAnswer {
	if e != nil {
		body, _ := json.Marshal(e.body())
		return storedAnswer{e.Status, body}
	}
	body, _ := json.Marshal(out)
	return storedAnswer{http.StatusOK, body}
}

// idemFinish stores the answer a under c's key, or releases the key when
// the answer says the call did not run (busy, unavailable, rate limited).
func (s *Server) idemFinish(ctx context.Context, c *idempotency.Claim, a storedAnswer) {
	ran := a.status != http.StatusServiceUnavailable && a.status != http.StatusTooManyRequests
	if err := s.calls.Store(ctx, c, a.status, a.body, ran); err != nil {
		s.logPlatform("idempotency store", c.Owner, err)
	}
}
