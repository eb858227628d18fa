package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/wire"
)

// awaitApprovals pauses the run while some calls of the turn wait for a
// human: each is recorded in the store and announced with an
// approval_needed event, then the loop waits for decisions. An approved
// call runs through Tools.Approve (exactly once: the store's Take lets
// only one decision through); a rejection becomes the tool message.
func (l *loop) awaitApprovals(ctx context.Context, r *run, step int, calls []toolCall, out []callOutcome) {
	waiting := map[string]int{} // token → index in calls
	for i := range out {
		res := out[i].res
		if res.Status != dispatcher.StatusPendingApproval {
			continue
		}
		if res.ApprovalToken == "" {
			out[i].res = platformFailure(calls[i], dispatcher.StatusInternal, errors.New("pending approval without a token"))
			recordResult(r, i, out[i].res)
			l.emitResult(r, step, calls[i], out[i].res)
			continue
		}
		p := Pending{RunID: r.id, Owner: r.owner, Token: res.ApprovalToken, CallID: calls[i].ID,
			Name: calls[i].Name, Arguments: calls[i].Arguments, Created: l.now()}
		if err := l.store.Put(ctx, p); err != nil {
			out[i].res = platformFailure(calls[i], dispatcher.StatusUnavailable, fmt.Errorf("record pending approval: %w", err))
			_, _ = l.tools.Reject(context.WithoutCancel(ctx), res.ApprovalToken, "approval could not be recorded")
			recordResult(r, i, out[i].res)
			l.emitResult(r, step, calls[i], out[i].res)
			continue
		}
		waiting[p.Token] = i
		r.update(func(r *run) {
			r.pending = append(r.pending, p.Token)
			r.status = wire.RunWaitingApproval
		})
		recordToken(r, i, p.Token)
		r.log.emit(wire.EventApprovalNeeded, step, map[string]any{
			"token": p.Token, "id": p.CallID, "name": p.Name, "arguments": p.Arguments, "content": res.Content,
		})
	}
	for len(waiting) > 0 {
		select {
		case <-ctx.Done():
			return // releasePending rejects what is left
		case <-r.inbox.signal:
		}
		for _, d := range r.inbox.drain() {
			i, ok := waiting[d.token]
			if !ok {
				continue
			}
			delete(waiting, d.token)
			r.update(func(r *run) {
				if r.decided == nil {
					r.decided = map[string]bool{}
				}
				r.decided[d.token] = true
			})
			start := time.Now()
			res := l.decide(ctx, calls[i], d)
			out[i] = callOutcome{res: res, ran: true}
			r.update(func(r *run) {
				r.pending = remove(r.pending, d.token)
				r.usage.ToolMS += time.Since(start).Milliseconds()
			})
			recordResult(r, i, res)
			l.emitResult(r, step, calls[i], res)
		}
	}
	r.update(func(r *run) {
		if r.status == wire.RunWaitingApproval {
			r.status = wire.RunRunning
		}
	})
	if r.save != nil {
		r.save()
	}
}

// decide carries out one decision.
func (l *loop) decide(ctx context.Context, c toolCall, d decision) dispatcher.Result {
	var res dispatcher.Result
	var err error
	if d.approve {
		res, err = l.tools.Approve(ctx, d.token)
	} else {
		reason := d.reason
		if reason == "" {
			reason = "no reason given"
		}
		res, err = l.tools.Reject(ctx, d.token, reason)
		if res.Status == "" || res.Status == dispatcher.StatusOK {
			res.Status = dispatcher.StatusRejected
		}
		if res.Content == "" {
			res.Content = "A human rejected this call; it was not run. Reason: " + reason
		}
		if res.Reason == "" {
			res.Reason = "approval_rejected"
		}
	}
	if err != nil {
		l.logger.Warn("approval decision failed", "tool", c.Name, "approve", d.approve, "err", err)
		if res.Status == "" || res.Status == dispatcher.StatusOK {
			res = platformFailure(c, dispatcher.StatusInternal, err)
		}
	}
	if res.Status == dispatcher.StatusPendingApproval {
		res = platformFailure(c, dispatcher.StatusInternal, errors.New("the call is still pending after the decision"))
	}
	if res.CallID == "" {
		res.CallID = c.ID
	}
	if res.Name == "" {
		res.Name = c.Name
	}
	return res
}

// releasePending rejects, in the dispatcher, approvals a finished run
// leaves behind, and forgets them.
func (l *loop) releasePending(r *run) {
	ctx := context.Background()
	left, err := l.store.List(ctx, r.id)
	if err != nil {
		l.logger.Warn("list pending approvals", "run", r.id, "err", err)
	}
	for _, p := range left {
		if _, err := l.store.Take(ctx, r.id, p.Token); err == nil {
			if _, err := l.tools.Reject(ctx, p.Token, "the run ended before a decision"); err != nil {
				l.logger.Warn("release pending approval", "run", r.id, "err", err)
			}
		}
	}
	for _, d := range r.inbox.drain() { // decided just as the run ended: never run
		r.mu.Lock()
		applied := r.decided[d.token]
		r.mu.Unlock()
		if applied {
			continue
		}
		if _, err := l.tools.Reject(ctx, d.token, "the run ended before the decision was applied"); err != nil {
			l.logger.Warn("release decided approval", "run", r.id, "err", err)
		}
	}
	if err := l.store.DeleteRun(ctx, r.id); err != nil {
		l.logger.Warn("forget pending approvals", "run", r.id, "err", err)
	}
	r.update(func(r *run) { r.pending = nil })
}

// remove returns list without s.
func remove(list []string, s string) []string {
	out := list[:0]
	for _, v := range list {
		if v != s {
			out = append(out, v)
		}
	}
	return out
}
