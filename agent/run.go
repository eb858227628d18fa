package agent

import (
	"context"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/wire"
)

// run is one loop's state, shared between the loop goroutine and the
// Manager's readers.
type run struct {
	id      string
	owner   string
	req     RunRequest
	created time.Time
	log     *eventLog
	inbox   *mailbox
	ctx     context.Context // the loop's, made with cancel
	cancel  context.CancelCauseFunc
	done    chan struct{} // closed when the loop has returned

	mu      sync.Mutex
	status  wire.RunStatus
	steps   int
	usage   wire.Usage
	final   string
	errMsg  string
	ended   time.Time
	pending []string
	// cp is the checkpoint a takeover resumes from; cancelReq a cancel
	// asked for through another replica.
	cp        *checkpoint
	cancelReq bool
	decided   map[string]bool // approval tokens whose decision was applied

	// pmu serialises writes of the stored record; version is its last
	// version written, lastWrite when, lost that another replica holds it.
	pmu       sync.Mutex
	version   int64
	lastWrite time.Time
	lost      bool
	// save persists the run (checkpoint and lease); set by the Manager.
	save func()
}

// checkpoint records where the loop stands and persists it.
func (r *run) checkpoint(f func(cp *checkpoint)) {
	r.update(func(r *run) {
		if r.cp == nil {
			r.cp = &checkpoint{}
		}
		f(r.cp)
	})
	if r.save != nil {
		r.save()
	}
}

// view returns a snapshot.
func (r *run) view() wire.Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	return wire.Run{
		ID: r.id, Status: r.status, Steps: r.steps, Usage: r.usage,
		FinalAnswer: r.final, Error: r.errMsg, Created: r.created, Ended: r.ended,
		PendingApprovals: append([]string(nil), r.pending...),
	}
}

// update changes the state under the lock.
func (r *run) update(f func(r *run)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r)
}

// finished reports whether the run has ended.
func (r *run) finished() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// decision is a human's answer to one pending approval.
type decision struct {
	token   string
	approve bool
	reason  string
}

// mailbox hands decisions to the loop without ever blocking the sender.
type mailbox struct {
	mu     sync.Mutex
	items  []decision
	signal chan struct{}
}

// newMailbox returns an empty mailbox.
func newMailbox() *mailbox { return &mailbox{signal: make(chan struct{}, 1)} }

// push adds d and wakes the loop.
func (m *mailbox) push(d decision) {
	m.mu.Lock()
	m.items = append(m.items, d)
	m.mu.Unlock()
	select {
	case m.signal <- struct{}{}:
	default:
	}
}

// drain returns and removes everything waiting.
func (m *mailbox) drain() []decision {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.items
	m.items = nil
	return out
}

// addUsage adds b to a.
func addUsage(a *wire.Usage, b wire.Usage) {
	a.PromptTokens += b.PromptTokens
	a.CompletionTokens += b.CompletionTokens
	a.TotalTokens += b.TotalTokens
	a.ToolSchemaTokens += b.ToolSchemaTokens
	a.ModelMS += b.ModelMS
	a.ToolMS += b.ToolMS
	a.Estimated = a.Estimated || b.Estimated
}
