package dispatcher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/approvals"
)

// Pending is a call held for approval.
type Pending struct {
	// Call is the call as received (arguments normalised to a JSON object).
	Call Call `json:"call"`
	// Rules are the policy rules that asked for approval; empty when the
	// tool itself needs approval.
	Rules []string `json:"rules,omitempty"`
	// Expires is when the token stops being valid.
	Expires time.Time `json:"expires"`
}

// heldCalls keeps the dispatcher's pending calls, JSON-encoded and
// ungrouped (run ""), in an approvals.Store, whose take-once Take makes a
// held call run at most once.
type heldCalls struct {
	store approvals.Store
	now   func() time.Time
}

// Put stores p under token until p.Expires.
func (h heldCalls) Put(ctx context.Context, token string, p Pending) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("dispatcher: encode held call: %w", err)
	}
	return h.store.Put(ctx, approvals.Record{Token: token, Value: b, Expires: p.Expires})
}

// Take removes and returns the pending call; it returns an error wrapping
// ErrApprovalNotFound when the token is unknown, expired or taken.
func (h heldCalls) Take(ctx context.Context, token string) (Pending, error) {
	r, err := h.store.Take(ctx, "", token)
	if errors.Is(err, approvals.ErrNotFound) {
		return Pending{}, ErrApprovalNotFound
	}
	if err != nil {
		return Pending{}, err
	}
	var p Pending
	if err := json.Unmarshal(r.Value, &p); err != nil {
		return Pending{}, fmt.Errorf("dispatcher: decode held call: %w", err)
	}
	if h.now().After(p.Expires) {
		return Pending{}, ErrApprovalNotFound
	}
	return p, nil
}

// newToken returns a random approval token.
func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("dispatcher: approval token: %w", err)
	}
	return "apv_" + hex.EncodeToString(b), nil
}
