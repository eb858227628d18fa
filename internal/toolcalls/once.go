package toolcalls

import (
	"context"
	"encoding/json"
	"time"

	"github.com/airlock-dev/airlock/internal/idempotency"
	"github.com/airlock-dev/airlock/wire"
)

// Poll is how often a request waiting for another's answer asks again.
const Poll = 50 * time.Millisecond

// Stored is an answer as an idempotency key keeps it: the API's status
// and body, and whether the call ran (an answer saying it did not, busy or
// unavailable, frees the key for a retry instead of being kept).
type Stored struct {
	Status int
	Body   []byte
	Ran    bool
}

// Once answers request r at most once per key (see package idempotency):
// when r holds the key, run runs the call (with the claim, whose JobKey
// the dispatcher gets) and its answer is stored; when another request
// holds it, wait is called at every poll (false stops waiting: Once then
// returns the context's error, or context.Canceled) until that answer is
// stored, and that answer is returned with replayed true; so is a stored
// answer, unless the artifacts it links to are gone (then it is forgotten
// and the call runs again). The errors are the idempotency keys' (a
// conflict, unavailable) and the artifact store's; a failure to store the
// answer is logged, and the answer returned.
func (s *Service) Once(ctx context.Context, r idempotency.Request, run func(*idempotency.Claim) Stored, wait func() bool) (a Stored, replayed bool, err error) {
	var seen []string
	for {
		step, err := s.idem.Next(ctx, r, seen)
		switch {
		case err != nil:
			return Stored{}, false, err
		case step.Claim != nil:
			stop := s.idem.Hold(step.Claim)
			a := run(step.Claim)
			stop()
			// The answer is kept even when the request that ran the call is
			// gone (a detached call: a retry with its key collects it).
			if err := s.store(context.WithoutCancel(ctx), step.Claim, a); err != nil && s.Logger != nil {
				s.Logger.Warn("toolcalls: idempotency store failed", "owner", r.Owner, "err", err)
			}
			return a, false, nil
		case step.Answer != nil:
			alive, err := s.artifactsAlive(ctx, r.Owner, step.Answer.Body)
			if err != nil {
				return Stored{}, false, err
			}
			if alive {
				return Stored{Status: step.Answer.Status, Body: step.Answer.Body, Ran: true}, true, nil
			}
			if err := s.idem.Forget(ctx, r, step.Answer); err != nil {
				return Stored{}, false, err
			}
			continue
		}
		if len(seen) == 0 || seen[len(seen)-1] != step.Waiting {
			seen = append(seen, step.Waiting)
		}
		if !wait() {
			return Stored{}, false, context.Cause(ctx)
		}
		select {
		case <-ctx.Done():
			return Stored{}, false, context.Cause(ctx)
		case <-time.After(Poll):
		}
	}
}

// artifactsAlive reports whether every artifact a stored answer body
// links to is still kept (an error answer links to none).
func (s *Service) artifactsAlive(ctx context.Context, owner string, body []byte) (bool, error) {
	var out wire.ToolCallResponse
	if json.Unmarshal(body, &out) != nil {
		return true, nil
	}
	for _, a := range out.Result.Artifacts {
		if a.URL == "" {
			continue
		}
		if ok, err := s.artifacts.Exists(ctx, owner, out.Result.SessionID, a.ID); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// store keeps answer a of the call c claimed, or releases c's key when
// the call did not run. An answer linking to artifacts is kept no longer
// than they are.
func (s *Service) store(ctx context.Context, c *idempotency.Claim, a Stored) error {
	if !a.Ran {
		s.idem.Release(ctx, c)
		return nil
	}
	var keep time.Duration
	var out wire.ToolCallResponse
	if json.Unmarshal(a.Body, &out) == nil {
		for _, art := range out.Result.Artifacts {
			if art.URL != "" {
				keep = min(idempotency.Keep, s.artifacts.TTL())
			}
		}
	}
	return s.idem.Finish(ctx, c, a.Status, a.Body, keep)
}
