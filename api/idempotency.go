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

// maxIdempotencyKey bounds an Idempotency-Key header in bytes.
const maxIdempotencyKey = 200

// idemTTL is how long a tool call's idempotency key is remembered.
const idemTTL = 24 * time.Hour

// idemPoll is how often a retry waiting for the first request's result
// looks for it.
const idemPoll = 50 * time.Millisecond

// idemLease is how long a reservation outlives the request holding it
// without being renewed (it renews every idemLease/3 while the call runs):
// when the replica running the call dies, a waiting retry takes the key
// over within idemLease and runs the call again with the same
// dispatcher.Call.IdempotencyKey, which attaches it to the same job.
const idemLease = 30 * time.Second

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

// idemKey is the store key of owner's idempotency key.
func idemKey(owner, key string) state.Key { return state.Key{Kind: idemKind, Owner: owner, ID: key} }

// idemReserve tries to reserve key for owner's call with fingerprint fp.
// run true: this request holds the reservation (version, for renewing it)
// and must run the call. Otherwise rec is the key's record: Done with the
// first request's answer, or still running. Errors are the answers: 409
// for the key used with another request, 503 when the store cannot be
// reached (the call is not run).
func (s *Server) idemReserve(ctx context.Context, owner, key, fp string) (run bool, version int64, rec *idemRecord, e *Error) {
	b, _ := json.Marshal(idemRecord{Fingerprint: fp})
	for range 3 {
		v, err := s.deps.State.Put(ctx, idemKey(owner, key), b, state.PutOptions{TTL: idemLease, IfVersion: -1})
		if err == nil {
			return true, v, nil, nil
		}
		if !errors.Is(err, state.ErrConflict) {
			s.logPlatform("idempotency reserve", owner, err)
			return false, 0, nil, newError(core.ErrUnavailable, "the state store is unavailable; the call was not run, retry later")
		}
		rec, found, e := s.idemPeek(ctx, owner, key, fp)
		if e != nil || found {
			return false, 0, rec, e
		}
		// released (not run) or its lease expired between the two: again
	}
	return false, 0, nil, newError(core.ErrBusy, "the call with Idempotency-Key "+key+" is changing hands; retry")
}

// idemPeek reads key's record; found false means there is none (released,
// or its holder's lease expired).
func (s *Server) idemPeek(ctx context.Context, owner, key, fp string) (*idemRecord, bool, *Error) {
	it, err := s.deps.State.Get(ctx, idemKey(owner, key))
	if errors.Is(err, state.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, newError(core.ErrUnavailable, "the state store is unavailable; retry later")
	}
	var rec idemRecord
	if json.Unmarshal(it.Value, &rec) != nil {
		return nil, false, newError(core.ErrInternal, "corrupt idempotency record")
	}
	if rec.Fingerprint != fp {
		return nil, false, newError(core.ErrConflict, "Idempotency-Key "+key+" was used for a different request").
			withDetails(map[string]any{"idempotency_key": key})
	}
	return &rec, true, nil
}

// idemBegin reserves key for owner's call with fingerprint fp. It returns
// true (and the reservation's version) when this request must run the
// call; otherwise it has written the answer: the first request's stored
// answer (waiting for it while that request runs, taking the key over if
// that request's lease expires), 409 for the same key with another
// request, 503 when the store is unavailable (and the call is not run).
func (s *Server) idemBegin(c *gin.Context, owner, key, fp string) (bool, int64) {
	ctx := c.Request.Context()
	for {
		run, ver, rec, e := s.idemReserve(ctx, owner, key, fp)
		switch {
		case e != nil:
			abortError(c, e)
			return false, 0
		case run:
			return true, ver
		case rec.Done:
			c.Header("Idempotent-Replayed", "true")
			c.Data(rec.Status, "application/json; charset=utf-8", rec.Body)
			return false, 0
		}
		select {
		case <-ctx.Done():
			abortError(c, newError(core.ErrUnavailable, "the call with Idempotency-Key "+key+" is still running; retry later"))
			return false, 0
		case <-time.After(idemPoll):
		}
	}
}

// idemHold renews owner's reservation of key (at version) every
// idemLease/3 until the returned stop is called, so it does not expire
// while the call runs; it gives up when another request took the key over.
func (s *Server) idemHold(owner, key, fp string, version int64) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b, _ := json.Marshal(idemRecord{Fingerprint: fp})
		t := time.NewTicker(idemLease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			v, err := s.deps.State.Put(pctx, idemKey(owner, key), b, state.PutOptions{TTL: idemLease, IfVersion: version})
			pcancel()
			switch {
			case err == nil:
				version = v
			case errors.Is(err, state.ErrConflict):
				return // taken over after our lease lapsed
			}
		}
	}()
	return func() { cancel(); <-done }
}

// idemFinish stores the answer of owner's call under key, or, for an
// answer saying the call did not run (busy, unavailable, rate limited),
// releases the key so a retry runs it.
func (s *Server) idemFinish(owner, key, fp string, status int, body []byte, notRun bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	k := idemKey(owner, key)
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
