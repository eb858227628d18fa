package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// errLeaseLost ends a run's local loop when another replica holds it.
var errLeaseLost = errors.New("run lease lost to another replica")

// runRecord is a run as stored (kind "run", per owner): its request,
// progress, outcome, the replica holding it with its lease, and the
// checkpoint a takeover resumes from.
type runRecord struct {
	ID              string         `json:"id"`
	Owner           string         `json:"owner"`
	Request         RunRequest     `json:"request"`
	Status          wire.RunStatus `json:"status"`
	Steps           int            `json:"steps"`
	Usage           wire.Usage     `json:"usage"`
	Final           string         `json:"final,omitempty"`
	Error           string         `json:"error,omitempty"`
	Created         time.Time      `json:"created"`
	Ended           time.Time      `json:"ended,omitzero"`
	Pending         []string       `json:"pending,omitempty"`
	Holder          string         `json:"holder,omitempty"`
	LeaseUntil      time.Time      `json:"lease_until,omitzero"`
	CancelRequested bool           `json:"cancel_requested,omitempty"`
	Checkpoint      *checkpoint    `json:"checkpoint,omitempty"`
	// Version is the store's version of the record (not stored).
	Version int64 `json:"-"`
}

// checkpoint is where a run's loop stands: Msgs is the conversation before
// the model call of step Step; Turn, once the model has answered that
// call, is its answer and the tool results recorded so far.
type checkpoint struct {
	Step int       `json:"step"`
	Msgs []message `json:"messages"`
	Turn *turn     `json:"turn,omitempty"`
}

// turn is one model answer with tool calls being carried out.
type turn struct {
	Content      string     `json:"content"`
	FinishReason string     `json:"finish_reason,omitempty"`
	Calls        []toolCall `json:"calls"`
	// Results holds the tool message content of every call already
	// answered, by index; a resumed run never runs those again.
	Results map[int]string `json:"results,omitempty"`
	// Tokens holds the approval token of calls waiting for a human.
	Tokens map[int]string `json:"tokens,omitempty"`
}

// clone copies the checkpoint deeply enough for the loop to go on
// changing its own copy.
func (c *checkpoint) clone() *checkpoint {
	if c == nil {
		return nil
	}
	out := &checkpoint{Step: c.Step, Msgs: append([]message(nil), c.Msgs...)}
	if t := c.Turn; t != nil {
		nt := *t
		nt.Calls = append([]toolCall(nil), t.Calls...)
		nt.Results, nt.Tokens = map[int]string{}, map[int]string{}
		for k, v := range t.Results {
			nt.Results[k] = v
		}
		for k, v := range t.Tokens {
			nt.Tokens[k] = v
		}
		out.Turn = &nt
	}
	return out
}

// conversation is the whole conversation of a checkpoint: with a turn in
// progress, its answer and the tool results known (others marked not run).
func (c *checkpoint) conversation() []message {
	if c == nil {
		return nil
	}
	msgs := append([]message(nil), c.Msgs...)
	if t := c.Turn; t != nil {
		msgs = append(msgs, message{Role: "assistant", Content: t.Content, ToolCalls: t.Calls})
		for i, call := range t.Calls {
			content, ok := t.Results[i]
			if !ok {
				content = "[status: not_run]\nThe run ended before this call was answered."
			}
			msgs = append(msgs, message{Role: "tool", ToolCallID: call.ID, Content: content})
		}
	}
	return msgs
}

// maxStoredContent bounds one message content in a checkpoint written
// after the full one was too large for the store.
const maxStoredContent = 16 << 10

// compacted returns a copy with every content over limit cut to its head
// and tail.
func (c *checkpoint) compacted(limit int) *checkpoint {
	out := c.clone()
	cut := func(s string) string {
		if len(s) <= limit {
			return s
		}
		return s[:limit/2] + "\n[... cut: the run's checkpoint was too large ...]\n" + s[len(s)-limit/2:]
	}
	for i := range out.Msgs {
		out.Msgs[i].Content = cut(out.Msgs[i].Content)
	}
	if out.Turn != nil {
		for k, v := range out.Turn.Results {
			out.Turn.Results[k] = cut(v)
		}
	}
	return out
}

// runKey names owner's run record id.
func runKey(owner, id string) state.Key { return state.Key{Kind: "run", Owner: owner, ID: id} }

// activeKey names run id's entry in the server-wide index of runs not
// yet final, which every Manager scans for expired leases.
func activeKey(id string) state.Key { return state.Key{Kind: "runs-active", ID: id} }

// decisionsKey names the log of approval decisions for owner's run id:
// whatever replica an approval arrives at appends it, the replica driving
// the run follows it.
func decisionsKey(owner, id string) state.Key {
	return state.Key{Kind: "rundecisions", Owner: owner, ID: id}
}

// getRecord reads owner's run id; another owner's or a missing one is
// ErrNotFound.
func (m *Manager) getRecord(ctx context.Context, owner, id string) (runRecord, error) {
	it, err := m.store.Get(ctx, runKey(owner, id))
	if errors.Is(err, state.ErrNotFound) {
		return runRecord{}, ErrNotFound
	}
	if err != nil {
		return runRecord{}, fmt.Errorf("read run %s: %w", id, err)
	}
	var rec runRecord
	if err := json.Unmarshal(it.Value, &rec); err != nil {
		return runRecord{}, fmt.Errorf("decode run %s: %w", id, err)
	}
	if rec.Owner != owner {
		return runRecord{}, ErrNotFound
	}
	rec.Request.Owner = owner
	rec.Version = it.Version
	return rec, nil
}

// putRecord writes rec conditionally on version (see state.PutOptions)
// and returns the new version. Final records expire after Retention.
func (m *Manager) putRecord(ctx context.Context, rec runRecord, version int64) (int64, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return 0, fmt.Errorf("encode run %s: %w", rec.ID, err)
	}
	opt := state.PutOptions{IfVersion: version}
	if rec.Status.Final() {
		opt.TTL = m.cfg.Retention
	}
	return m.store.Put(ctx, runKey(rec.Owner, rec.ID), b, opt)
}

// record is the run's stored form, held by this Manager.
func (m *Manager) record(r *run) runRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := runRecord{
		ID: r.id, Owner: r.owner, Request: r.req, Status: r.status, Steps: r.steps, Usage: r.usage,
		Final: r.final, Error: r.errMsg, Created: r.created, Ended: r.ended,
		Pending: append([]string(nil), r.pending...), CancelRequested: r.cancelReq,
		Holder: m.id, LeaseUntil: m.cfg.Now().Add(m.cfg.LeaseTTL), Checkpoint: r.cp.clone(),
	}
	if rec.Status.Final() {
		rec.Holder, rec.LeaseUntil = "", time.Time{}
	}
	return rec
}

// persist writes the run's state, renewing its lease (compare and swap on
// the record's version). A record changed by another replica is re-read:
// a cancel request is adopted, a lost lease stops the local loop.
func (m *Manager) persist(r *run) error {
	return m.persistWith(r, nil)
}

// persistWith is persist with a last change to the record (release).
func (m *Manager) persistWith(r *run, change func(*runRecord)) error {
	r.pmu.Lock()
	defer r.pmu.Unlock()
	if r.lost {
		return errLeaseLost
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 5 {
		rec := m.record(r)
		if change != nil {
			change(&rec)
		}
		v, err := m.putRecord(ctx, rec, r.version)
		if errors.Is(err, state.ErrTooLarge) && rec.Checkpoint != nil {
			// A huge conversation: keep the lease and a checkpoint with
			// long contents cut, rather than no checkpoint at all.
			rec.Checkpoint = rec.Checkpoint.compacted(maxStoredContent)
			v, err = m.putRecord(ctx, rec, r.version)
		}
		if err == nil {
			r.version, r.lastWrite = v, m.cfg.Now()
			return nil
		}
		if !errors.Is(err, state.ErrConflict) {
			if m.cfg.Now().Sub(r.lastWrite) > m.cfg.LeaseTTL-m.cfg.LeaseRenew/2 {
				// The lease may have run out meanwhile: another replica
				// may take the run over, so this one must stop.
				r.lost = true
				r.cancel(errLeaseLost)
			}
			return fmt.Errorf("persist run %s: %w", r.id, err)
		}
		cur, gerr := m.getRecord(ctx, r.owner, r.id)
		if gerr != nil {
			return fmt.Errorf("persist run %s: %w", r.id, gerr)
		}
		if cur.Holder != m.id || cur.Status.Final() {
			r.lost = true
			r.cancel(errLeaseLost)
			return errLeaseLost
		}
		if cur.CancelRequested {
			r.update(func(r *run) { r.cancelReq = true })
			r.cancel(errCancelled)
		}
		r.version = cur.Version
	}
	return fmt.Errorf("persist run %s: %w", r.id, state.ErrConflict)
}

// checkpointed persists the run and logs a failure; the loop goes on.
func (m *Manager) checkpointed(r *run) {
	if err := m.persist(r); err != nil && !errors.Is(err, errLeaseLost) {
		m.logger.Warn("checkpoint run", "run", r.id, "err", err)
	}
}

// holdLease renews r's lease every LeaseRenew until ctx is done.
func (m *Manager) holdLease(ctx context.Context, r *run) {
	t := time.NewTicker(m.cfg.LeaseRenew)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.checkpointed(r)
		}
	}
}

// followDecisions hands the approval decisions appended to the run's
// decision log (from any replica) to the loop until ctx is done, polling
// every PollWait. The log
// is read from its start, so a taken-over run sees decisions made before.
func (m *Manager) followDecisions(ctx context.Context, r *run) {
	key := decisionsKey(r.owner, r.id)
	var next int64
	for ctx.Err() == nil {
		// Polled, not blocking: one follower per run must not hold a
		// store connection all the time.
		entries, err := m.store.Range(ctx, key, next, 64, 0)
		if err == nil && len(entries) == 0 {
			_ = sleepCtx(ctx, m.cfg.PollWait)
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				m.logger.Warn("read approval decisions", "run", r.id, "err", err)
				_ = sleepCtx(ctx, m.cfg.PollWait)
			}
			continue
		}
		for _, e := range entries {
			next = e.Seq
			var d storedDecision
			if err := json.Unmarshal(e.Data, &d); err != nil {
				m.logger.Warn("decode approval decision", "run", r.id, "err", err)
				continue
			}
			r.inbox.push(decision{token: d.Token, approve: d.Approve, reason: d.Reason})
		}
	}
}

// storedDecision is one entry of a run's decision log.
type storedDecision struct {
	Token   string `json:"token"`
	Approve bool   `json:"approve"`
	Reason  string `json:"reason,omitempty"`
}
