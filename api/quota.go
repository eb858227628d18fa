package api

import (
	"fmt"
	"sync"

	"github.com/airlock-dev/airlock/core"
)

// slots bounds simultaneous operations (uploads) per owner and in total.
// An owner at its own bound gets 429 quota; a full server gets 429 busy.
type slots struct {
	mu       sync.Mutex
	what     string
	perOwner int
	total    int
	n        map[string]int
	sum      int
}

// newSlots returns a bound of perOwner per owner and total overall for the
// operation named what (e.g. "uploads").
func newSlots(what string, perOwner, total int) *slots {
	return &slots{what: what, perOwner: perOwner, total: total, n: map[string]int{}}
}

// acquire takes a slot for owner, or returns the 429 answer.
func (s *slots) acquire(owner string) *Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[owner] >= s.perOwner {
		e := newError(core.ErrQuota, fmt.Sprintf("too many concurrent %s for this API key (budget: %d at once)", s.what, s.perOwner)).
			withDetails(map[string]any{"budget": "concurrent_" + s.what, "limit": s.perOwner})
		e.RetryAfter = retryAfterBusy // a slot frees itself when a call ends
		return e
	}
	if s.sum >= s.total {
		return newError(core.ErrBusy, fmt.Sprintf("the server has %d %s in progress, its maximum; retry later", s.sum, s.what))
	}
	s.n[owner]++
	s.sum++
	return nil
}

// release frees owner's slot.
func (s *slots) release(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sum--
	if s.n[owner]--; s.n[owner] <= 0 {
		delete(s.n, owner)
	}
}
