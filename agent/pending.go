package agent

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
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

// PendingStore keeps the approvals runs are waiting on. Take must be
// atomic: of two concurrent Takes of one token, exactly one succeeds, which
// is what makes an approved call run exactly once. A Redis implementation
// can replace MemoryPending; the waiting run itself lives in the process.
type PendingStore interface {
	// Put records p.
	Put(ctx context.Context, p Pending) error
	// Take removes and returns the pending approval, or ErrNotPending.
	Take(ctx context.Context, runID, token string) (Pending, error)
	// List returns a run's pending approvals, oldest first.
	List(ctx context.Context, runID string) ([]Pending, error)
	// DeleteRun forgets every pending approval of a run.
	DeleteRun(ctx context.Context, runID string) error
}

// MemoryPending is an in-process PendingStore.
type MemoryPending struct {
	mu   sync.Mutex
	runs map[string][]Pending
}

// NewMemoryPending returns an empty store.
func NewMemoryPending() *MemoryPending { return &MemoryPending{runs: map[string][]Pending{}} }

// Put records p.
func (s *MemoryPending) Put(_ context.Context, p Pending) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs[p.RunID] = append(s.runs[p.RunID], p)
	return nil
}

// Take removes and returns the pending approval, or ErrNotPending.
func (s *MemoryPending) Take(_ context.Context, runID, token string) (Pending, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.runs[runID]
	for i, p := range list {
		if p.Token == token {
			s.runs[runID] = append(list[:i:i], list[i+1:]...)
			if len(s.runs[runID]) == 0 {
				delete(s.runs, runID)
			}
			return p, nil
		}
	}
	return Pending{}, ErrNotPending
}

// List returns a run's pending approvals, oldest first.
func (s *MemoryPending) List(_ context.Context, runID string) ([]Pending, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Pending(nil), s.runs[runID]...), nil
}

// DeleteRun forgets every pending approval of a run.
func (s *MemoryPending) DeleteRun(_ context.Context, runID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.runs, runID)
	return nil
}
