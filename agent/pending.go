package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/approvals"
)

// ErrNotPending is returned when an approval token is not (or no longer)
// waiting in a run: unknown, already decided, or the run has ended.
var ErrNotPending = core.E("agent", core.ErrNotFound, errors.New("no pending approval with that token"))

// Pending is a tool call waiting for a human decision.
type Pending struct {
	RunID     string    `json:"run_id"`
	Owner     string    `json:"owner"`
	Token     string    `json:"token"`
	CallID    string    `json:"call_id"`
	Name      string    `json:"name"`
	Arguments string    `json:"arguments"`
	Created   time.Time `json:"created"`
}

// pendingStore keeps the approvals runs are waiting on, JSON-encoded and
// grouped by run id, in an approvals.Store (memory, or Redis so that they
// survive an API restart). Take is take-once: of two concurrent Takes of
// one token exactly one succeeds, which makes an approved call run exactly
// once. The waiting run itself lives in the process.
type pendingStore struct{ s approvals.Store }

// Put records p.
func (ps pendingStore) Put(ctx context.Context, p Pending) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("agent: encode pending approval: %w", err)
	}
	return ps.s.Put(ctx, approvals.Record{Run: p.RunID, Token: p.Token, Value: b})
}

// Take removes and returns the pending approval, or ErrNotPending.
func (ps pendingStore) Take(ctx context.Context, runID, token string) (Pending, error) {
	r, err := ps.s.Take(ctx, runID, token)
	if errors.Is(err, approvals.ErrNotFound) {
		return Pending{}, ErrNotPending
	}
	if err != nil {
		return Pending{}, err
	}
	return decodePending(r)
}

// List returns a run's pending approvals, oldest first.
func (ps pendingStore) List(ctx context.Context, runID string) ([]Pending, error) {
	recs, err := ps.s.List(ctx, runID)
	if err != nil {
		return nil, err
	}
	out := make([]Pending, 0, len(recs))
	for _, r := range recs {
		p, err := decodePending(r)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// DeleteRun forgets every pending approval of a run.
func (ps pendingStore) DeleteRun(ctx context.Context, runID string) error {
	return ps.s.DeleteRun(ctx, runID)
}

// decodePending reads a stored Pending.
func decodePending(r approvals.Record) (Pending, error) {
	var p Pending
	if err := json.Unmarshal(r.Value, &p); err != nil {
		return Pending{}, fmt.Errorf("agent: decode pending approval %q: %w", r.Token, err)
	}
	return p, nil
}
