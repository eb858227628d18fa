package idempotency

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// Bounds of the protocol.
const (
	// kind is the state.Store kind of idempotency records.
	kind = "idem"
	// OpTimeout bounds each store operation of a request: a stalled store
	// refuses the call (unavailable) after this, not after its own
	// timeouts.
	OpTimeout = 2 * time.Second
	// Lease is how long a reservation outlives the request holding it
	// without being renewed (Hold renews it every Lease/3): when the
	// replica running the call dies, a waiting request takes the key over
	// within Lease.
	Lease = 30 * time.Second
	// Keep is how long an explicit key's answer is kept by default.
	Keep = 24 * time.Hour
	// Linger is how long an implicit key's answer stays for the requests
	// that were waiting for it (they poll far more often).
	Linger = 30 * time.Second
)

// Request is one request asking to run the call under a key.
type Request struct {
	Owner string
	Key   string
	// Fingerprint is a hash of the request; the key's other requests must
	// match it (else ConflictError).
	Fingerprint string
	// Implicit marks a key derived from the call id rather than sent. Its
	// records are written lazily (state.PutOptions.Lazy): an implicit key
	// guards a duplicate sent while the call runs, and its answer is
	// replayed only to requests that saw the call run; on the embedded
	// store (one process) those requests and the call itself end with a
	// crash, so the records need no disk sync, and a crash that loses them
	// (at most the store's flush interval) lets a retry run at once
	// instead of waiting out the lease. Redis writes them as any other.
	Implicit bool
}

// Claim is a reservation held by the request that runs the call.
type Claim struct {
	Request
	// Token names this run of the call: requests waiting for it name it,
	// and a takeover keeps it.
	Token   string
	version int64
}

// Answer is the stored answer of a finished call.
type Answer struct {
	Status  int
	Body    []byte
	version int64
}

// Step is what a request must do next: exactly one of Claim (run the
// call), Answer (replay it) or Waiting (the token of the request running
// it: wait and ask again).
type Step struct {
	Claim   *Claim
	Answer  *Answer
	Waiting string
}

// record is a key's state: reserved by the request running the call
// (Done false), then its answer.
type record struct {
	Fingerprint string `json:"fp"`
	Token       string `json:"token,omitempty"`
	Implicit    bool   `json:"implicit,omitempty"`
	Done        bool   `json:"done"`
	Status      int    `json:"status,omitempty"`
	Body        []byte `json:"body,omitempty"`
}

// Keys keeps idempotency records in a state store. It is safe for
// concurrent use.
type Keys struct {
	st state.Store
}

// New returns the keys over st.
func New(st state.Store) *Keys { return &Keys{st: st} }

// storeKey is the store key of owner's idempotency key.
func storeKey(owner, key string) state.Key { return state.Key{Kind: kind, Owner: owner, ID: key} }

// Next tells request r what to do. seen lists the tokens r found running
// while it waited (none on its first call): an implicit key's answer is
// replayed only to a request that saw its call run, and a takeover keeps
// the last token seen. Errors: a *ConflictError for the key used with
// another request, unavailable when the store cannot be reached in
// OpTimeout (the call must not run), busy when the key keeps changing
// hands.
func (k *Keys) Next(ctx context.Context, r Request, seen []string) (Step, error) {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	token := ""
	if len(seen) > 0 {
		token = seen[len(seen)-1]
	}
	var cond int64 = -1 // create
	for range 3 {
		if token == "" {
			token = rand.Text()
		}
		c := &Claim{Request: r, Token: token}
		if err := k.reserve(ctx, c, cond); err == nil {
			return Step{Claim: c}, nil
		} else if !errors.Is(err, state.ErrConflict) {
			return Step{}, unavailable(err)
		}
		rec, ver, err := k.peek(ctx, r)
		switch {
		case err != nil:
			return Step{}, err
		case rec == nil: // released, or its lease lapsed: again
			cond = -1
		case !rec.Done:
			return Step{Waiting: rec.Token}, nil
		case !r.Implicit || slices.Contains(seen, rec.Token):
			return Step{Answer: &Answer{Status: rec.Status, Body: rec.Body, version: ver}}, nil
		default: // an implicit key's call answered before r asked: it runs again
			cond, token = ver, ""
		}
	}
	return Step{}, core.Errorf("idempotency", core.ErrBusy, "the call with this key is changing hands; retry")
}

// reserve writes c's reservation: a create (cond -1) or over version cond.
func (k *Keys) reserve(ctx context.Context, c *Claim, cond int64) error {
	b, err := json.Marshal(record{Fingerprint: c.Fingerprint, Token: c.Token, Implicit: c.Implicit})
	if err != nil {
		return fmt.Errorf("idempotency: encode: %w", err)
	}
	v, err := k.st.Put(ctx, storeKey(c.Owner, c.Key), b, state.PutOptions{TTL: Lease, IfVersion: cond, Lazy: c.Implicit})
	if err != nil {
		return fmt.Errorf("idempotency: reserve %s: %w", c.Key, err)
	}
	c.version = v
	return nil
}

// peek reads r's record and version; nil when there is none.
func (k *Keys) peek(ctx context.Context, r Request) (*record, int64, error) {
	it, err := k.st.Get(ctx, storeKey(r.Owner, r.Key))
	switch {
	case errors.Is(err, state.ErrNotFound):
		return nil, 0, nil
	case err != nil:
		return nil, 0, unavailable(err)
	}
	var rec record
	if err := json.Unmarshal(it.Value, &rec); err != nil {
		return nil, 0, core.E("idempotency", core.ErrInternal, fmt.Errorf("corrupt record of %s: %w", r.Key, err))
	}
	if rec.Fingerprint != r.Fingerprint {
		return nil, 0, &ConflictError{Key: r.Key}
	}
	return &rec, it.Version, nil
}

// Hold renews c's reservation every Lease/3 until the returned stop is
// called, so it does not lapse while the call runs; it gives up when
// another request took the key over.
func (k *Keys) Hold(c *Claim) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rctx, rcancel := context.WithTimeout(ctx, OpTimeout)
			err := k.reserve(rctx, c, c.version)
			rcancel()
			if errors.Is(err, state.ErrConflict) {
				return // taken over after the lease lapsed
			}
		}
	}()
	return func() { cancel(); <-done }
}

// Finish stores c's answer: an explicit key's for keep (Keep when 0), an
// implicit key's for Linger.
func (k *Keys) Finish(ctx context.Context, c *Claim, status int, body []byte, keep time.Duration) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), OpTimeout)
	defer cancel()
	ttl := keep
	switch {
	case c.Implicit:
		ttl = Linger
	case ttl <= 0:
		ttl = Keep
	}
	b, err := json.Marshal(record{Fingerprint: c.Fingerprint, Token: c.Token, Implicit: c.Implicit, Done: true, Status: status, Body: body})
	if err != nil {
		return fmt.Errorf("idempotency: encode: %w", err)
	}
	if _, err := k.st.Put(ctx, storeKey(c.Owner, c.Key), b, state.PutOptions{TTL: ttl, Lazy: c.Implicit}); err != nil {
		return fmt.Errorf("idempotency: store the answer of %s: %w", c.Key, err)
	}
	return nil
}

// Release frees c's key without an answer, for a call that did not run
// (refused as busy or unavailable): a retry runs it.
func (k *Keys) Release(ctx context.Context, c *Claim) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), OpTimeout)
	defer cancel()
	_ = state.DeleteWith(ctx, k.st, storeKey(c.Owner, c.Key), 0, c.Implicit)
}

// Forget drops answer a of r, which must not be replayed (its artifacts
// are gone): the key is free again.
func (k *Keys) Forget(ctx context.Context, r Request, a *Answer) error {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	err := k.st.Delete(ctx, storeKey(r.Owner, r.Key), a.version)
	if err != nil && !errors.Is(err, state.ErrConflict) {
		return unavailable(err)
	}
	return nil
}

// unavailable is the error of a store that could not be reached.
func unavailable(err error) error {
	return core.E("idempotency", core.ErrUnavailable, err)
}

// ConflictError is a key used with another request. It carries
// core.ErrConflict.
type ConflictError struct{ Key string }

// Error implements error.
func (e *ConflictError) Error() string {
	return "Idempotency-Key " + e.Key + " was used for a different request"
}

// Unwrap makes errors.Is(err, core.ErrConflict) true.
func (e *ConflictError) Unwrap() error { return core.ErrConflict }

// ErrorDetails are the details of the API's error answer.
func (e *ConflictError) ErrorDetails() map[string]any {
	return map[string]any{"idempotency_key": e.Key}
}

// JobKey is the dispatcher's idempotency key for c's call
// (dispatcher.Call.IdempotencyKey): the key itself for an explicit key,
// so every retry attaches to one job; with the token for an implicit
// one, so a later run of the same id is a new job.
func JobKey(c *Claim) string {
	if !c.Implicit {
		return c.Key
	}
	return strings.Join([]string{c.Key, c.Token}, ":")
}
