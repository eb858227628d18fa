package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/idempotency"
	"github.com/airlock-dev/airlock/internal/toolcalls"
	"github.com/airlock-dev/airlock/wire"
)

// maxIdempotencyKey bounds an Idempotency-Key header in bytes.
const maxIdempotencyKey = 200

// idemRequest is the idempotency request of a tool call: the
// Idempotency-Key header (explicit), else the call's id with a hash of its
// body (implicit: it protects a duplicate sent while the first runs, see
// api/README.md), else none (Key ""). An over-long key is answered 400.
func (s *Server) idemRequest(c *gin.Context, req wire.ToolCallRequest) (idempotency.Request, bool) {
	r := idempotency.Request{Owner: owner(c), Key: c.GetHeader("Idempotency-Key")}
	if r.Key == "" && req.ID == "" {
		return r, true // no key: nothing to fingerprint
	}
	b, _ := json.Marshal(req)
	sum := sha256.Sum256(b)
	r.Fingerprint = hex.EncodeToString(sum[:])
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

// idemError is the answer of a failed idempotency step: 409 for the key
// used with another request, 503 when the state store cannot be reached
// (the call did not run) or the request waiting for another's answer
// ended first.
func idemError(ctx context.Context, err error, r idempotency.Request) *Error {
	switch {
	case errors.Is(err, core.ErrUnavailable):
		return newError(core.ErrUnavailable, "the state store is unavailable; the call was not run, retry later")
	case ctx.Err() != nil:
		return newError(core.ErrUnavailable, "the call with idempotency key "+r.Key+" is still running; retry later")
	}
	e := toError(ctx, err)
	if e.Code == core.ErrBusy {
		e.Message = "the call with idempotency key " + r.Key + " is changing hands; retry"
	}
	return e
}

// runIdempotent answers a non-streamed tool call with an idempotency key
// (toolcalls.Service.Once): it runs the call holding the key, or replays
// the stored answer of the request that ran it (Idempotent-Replayed:
// true), waiting for it while it runs.
func (s *Server) runIdempotent(c *gin.Context, call dispatcher.Call, r idempotency.Request) {
	ctx := c.Request.Context()
	var out wire.ToolCallResponse
	var e *Error
	a, replayed, err := s.calls.Once(ctx, r, func(claim *idempotency.Claim) toolcalls.Stored {
		call.IdempotencyKey = idempotency.JobKey(claim)
		out, e = s.finishCall(ctx, call, s.deps.Dispatcher.Run(ctx, call))
		return encodeAnswer(out, e)
	}, func() bool { return true })
	switch {
	case err != nil:
		abortError(c, idemError(ctx, err, r))
	case replayed:
		c.Header("Idempotent-Replayed", "true")
		c.Data(a.Status, "application/json; charset=utf-8", a.Body)
	default:
		answer(c, out, e)
	}
}

// encodeAnswer is the stored form of a tool call's answer; an answer
// saying the call did not run (busy, unavailable, rate limited) is not
// kept.
func encodeAnswer(out wire.ToolCallResponse, e *Error) toolcalls.Stored {
	if e != nil {
		body, _ := json.Marshal(e.body())
		return toolcalls.Stored{Status: e.Status, Body: body,
			Ran: e.Status != http.StatusServiceUnavailable && e.Status != http.StatusTooManyRequests}
	}
	body, _ := json.Marshal(out)
	return toolcalls.Stored{Status: http.StatusOK, Body: body, Ran: true}
}
