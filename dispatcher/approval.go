package dispatcher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"
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

// ApprovalStore keeps pending approvals. Take must be atomic: a token is
// returned at most once, whatever the concurrency, so that a held call runs
// exactly once. A Redis implementation maps Put to SET with PX and Take to
// GETDEL.
type ApprovalStore interface {
	// Put stores p under token.
	Put(ctx context.Context, token string, p Pending) error
	// Take removes and returns the pending call; it returns
	// ErrApprovalNotFound when the token is unknown, expired or taken.
	Take(ctx context.Context, token string) (Pending, error)
}

// MemoryApprovals is an in-process ApprovalStore.
type MemoryApprovals struct {
	mu  sync.Mutex
	m   map[string]Pending
	now func() time.Time
}

// NewMemoryApprovals returns an empty in-memory store; now is the clock
// (nil means time.Now).
func NewMemoryApprovals(now func() time.Time) *MemoryApprovals {
	if now == nil {
		now = time.Now
	}
	return &MemoryApprovals{m: map[string]Pending{}, now: now}
}

// Put stores p and drops expired entries.
func (s *MemoryApprovals) Put(_ context.Context, token string, p Pending) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, v := range s.m {
		if now.After(v.Expires) {
			delete(s.m, k)
		}
	}
	s.m[token] = p
	return nil
}

// Take removes and returns the pending call for token.
func (s *MemoryApprovals) Take(_ context.Context, token string) (Pending, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.m[token]
	if !ok {
		return Pending{}, ErrApprovalNotFound
	}
	delete(s.m, token)
	if s.now().After(p.Expires) {
		return Pending{}, ErrApprovalNotFound
	}
	return p, nil
}

// Len returns the number of stored approvals, expired ones included.
func (s *MemoryApprovals) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// newToken returns a random approval token.
func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("dispatcher: approval token: %w", err)
	}
	return "apv_" + hex.EncodeToString(b), nil
}
