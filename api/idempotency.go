package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// idemKind is the state.Store kind of idempotency records.
const idemKind = "idem"

// idemTTL is how long a tool call's idempotency key is remembered.
const idemTTL = 24 * time.Hour

// idemPoll is how often a retry waiting for the first request's result
// looks for it.
const idemPoll = 50 * time.Millisecond

// idemRecord is one idempotency key's state: reserved by the request
// running the call (Done false), then its answer.
type idemRecord struct {
	// Fingerprint is the SHA-256 of the request; a retry must match it.
	Fingerprint string `json:"fp"`
	Done        bool   `json:"done"`
	Status      int    `json:"status,omitempty"`
	Body        []byte `json:"body,omitempty"`
}

// fingerprint hashes a tool call request.
func fingerprint(req toolCallRequest) string {
	b, _ := json.Marshal(req)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// idemBegin reserves key for owner's call with fingerprint fp. It returns
// true when this request must run the call; otherwise it has written the
// answer: the first request's stored answer (waiting for it while that
// request runs), 409 for the same key with another request, 503 when the
// store is unavailable (and the call is not run).
func (s *Server) idemBegin(c *gin.Context, owner, key, fp string) bool {
	k := state.Key{Kind: idemKind, Owner: owner, ID: key}
	ctx := c.Request.Context()
	b, _ := json.Marshal(idemRecord{Fingerprint: fp})
	_, err := s.deps.State.Put(ctx, k, b, state.PutOptions{TTL: idemTTL, IfVersion: -1})
	if err == nil {
		return true
	}
	if !errors.Is(err, state.ErrConflict) {
		s.logPlatform("idempotency reserve", owner, err)
		abortError(c, newError(core.ErrUnavailable, "the state store is unavailable; the call was not run, retry later"))
		return false
	}
	for {
		it, err := s.deps.State.Get(ctx, k)
		if errors.Is(err, state.ErrNotFound) { // the first request gave up without running: take over
			if _, err := s.deps.State.Put(ctx, k, b, state.PutOptions{TTL: idemTTL, IfVersion: -1}); err == nil {
				return true
			}
			continue
		}
		if err != nil {
			abortError(c, newError(core.ErrUnavailable, "the state store is unavailable; retry later"))
			return false
		}
		var rec idemRecord
		if json.Unmarshal(it.Value, &rec) != nil {
			abortError(c, newError(core.ErrInternal, "corrupt idempotency record"))
			return false
		}
		if rec.Fingerprint != fp {
			abortError(c, newError(core.ErrConflict, "Idempotency-Key "+key+" was used for a different request").
				withDetails(map[string]any{"idempotency_key": key}))
			return false
		}
		if rec.Done {
			c.Header("Idempotent-Replayed", "true")
			c.Data(rec.Status, "application/json; charset=utf-8", rec.Body)
			return false
		}
		select {
		case <-ctx.Done():
			abortError(c, newError(core.ErrUnavailable, "the call with Idempotency-Key "+key+" is still running; retry later"))
			return false
		case <-time.After(idemPoll):
		}
	}
}

// idemFinish stores the answer of owner's call under key, or, for an
// answer saying the call did not run (busy, unavailable, rate limited),
// releases the key so a retry runs it.
func (s *Server) idemFinish(owner, key, fp string, status int, body []byte, notRun bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	k := state.Key{Kind: idemKind, Owner: owner, ID: key}
	if notRun {
		_ = s.deps.State.Delete(ctx, k, 0)
		return
	}
	b, _ := json.Marshal(idemRecord{Fingerprint: fp, Done: true, Status: status, Body: body})
	if _, err := s.deps.State.Put(ctx, k, b, state.PutOptions{TTL: idemTTL}); err != nil {
		s.logPlatform("idempotency store", owner, err)
	}
}

// notRunStatus reports whether an answer with this status means the call
// was refused before it ran.
func notRunStatus(status int) bool {
	return status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests
}
