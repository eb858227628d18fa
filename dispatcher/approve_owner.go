package dispatcher

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// ApproveFor is Approve for a front door that knows the caller: the held
// call runs only when owner made it. A token held for another owner's call
// is answered like an unknown one (ErrApprovalNotFound) and stays held.
// It returns the held call with its Result.
func (d *Dispatcher) ApproveFor(ctx context.Context, owner, token string) (Call, Result, error) {
	start := time.Now()
	p, err := d.takeFor(ctx, owner, token)
	if err != nil {
		return Call{}, Result{}, fmt.Errorf("dispatcher: approve: %w", err)
	}
	res, decision := d.run(ctx, p.Call, &p)
	return p.Call, d.finish(ctx, p.Call, res, "approved:"+decision, start), nil
}

// RejectFor is Reject for a front door that knows the caller (see
// ApproveFor).
func (d *Dispatcher) RejectFor(ctx context.Context, owner, token, reason string) (Call, Result, error) {
	start := time.Now()
	p, err := d.takeFor(ctx, owner, token)
	if err != nil {
		return Call{}, Result{}, fmt.Errorf("dispatcher: reject: %w", err)
	}
	msg := "an operator rejected this call; it did not run"
	if strings.TrimSpace(reason) != "" {
		msg += ": " + reason
	}
	res := Result{CallID: p.Call.ID, Name: p.Call.Name, Status: StatusRejected, Reason: "approval_rejected", Content: msg}
	return p.Call, d.finish(ctx, p.Call, res, "rejected_by_approver", start), nil
}

// takeFor takes the call held under token when owner made it; another
// owner's call is put back.
func (d *Dispatcher) takeFor(ctx context.Context, owner, token string) (Pending, error) {
	p, err := d.approvals.Take(ctx, token)
	if err != nil {
		return Pending{}, err
	}
	if p.Call.Owner != owner {
		if perr := d.approvals.Put(context.WithoutCancel(ctx), token, p); perr != nil {
			return Pending{}, fmt.Errorf("put back another owner's held call: %w", perr)
		}
		return Pending{}, ErrApprovalNotFound
	}
	return p, nil
}
