package dispatcher

import (
	"context"
	"errors"
	"testing"
)

// TestApproveForOwnerOnly: a held call is decided only by its owner; another
// owner's attempt is not found and leaves the call held for its owner.
func TestApproveForOwnerOnly(t *testing.T) {
	cfg := testConfig()
	cfg.ApprovalTools = []string{ToolRunPython}
	ex := okExecutor()
	d, _ := newTestDispatcher(t, cfg, ex)
	ctx := context.Background()
	c := call(ToolRunPython, map[string]any{"code": "print(1)"})
	r := d.Run(ctx, c)
	if r.Status != StatusPendingApproval {
		t.Fatalf("not held: %+v", r)
	}
	if _, _, err := d.ApproveFor(ctx, c.Owner+"-other", r.ApprovalToken); !errors.Is(err, ErrApprovalNotFound) {
		t.Fatalf("another owner approved: %v", err)
	}
	if _, _, err := d.RejectFor(ctx, c.Owner+"-other", r.ApprovalToken, "x"); !errors.Is(err, ErrApprovalNotFound) {
		t.Fatalf("another owner rejected: %v", err)
	}
	if ex.calls() != 0 {
		t.Fatalf("ran %d times before its owner approved", ex.calls())
	}
	held, res, err := d.ApproveFor(ctx, c.Owner, r.ApprovalToken)
	if err != nil || res.Status != StatusOK || held.ID != c.ID || ex.calls() != 1 {
		t.Fatalf("owner's approval: %+v %+v %v, executor calls %d", held, res, err, ex.calls())
	}
	if _, _, err := d.ApproveFor(ctx, c.Owner, r.ApprovalToken); !errors.Is(err, ErrApprovalNotFound) {
		t.Fatalf("second approval: %v", err)
	}
}
