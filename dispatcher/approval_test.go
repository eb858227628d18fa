package dispatcher

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/approvals"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/redistest"
)

func TestApprovalExactlyOnce(t *testing.T) {
	t.Run("memory", func(t *testing.T) { approvalExactlyOnce(t, testConfig()) })
	t.Run("redis", func(t *testing.T) {
		cfg := testConfig()
		cfg.Approvals = approvals.NewRedis(redistest.Start(t, false).Client(t), "airlock:{test:approvals}", 0)
		approvalExactlyOnce(t, cfg)
	})
}

// approvalExactlyOnce holds a call and approves it concurrently: it runs
// once, and the token is then spent.
func approvalExactlyOnce(t *testing.T, cfg Config) {
	cfg.ApprovalTools = []string{ToolExecuteShell}
	ex := okExecutor()
	d, _ := newTestDispatcher(t, cfg, ex)
	ctx := context.Background()
	r := d.Run(ctx, call(ToolExecuteShell, map[string]any{"command": "ls /workspace"}))
	if r.Status != StatusPendingApproval || r.ApprovalToken == "" || ex.calls() != 0 {
		t.Fatalf("pending: %+v, executor calls %d", r, ex.calls())
	}
	if strings.Contains(r.Content, r.ApprovalToken) {
		t.Errorf("the token is not for the model")
	}
	// many concurrent approvals: exactly one runs
	var wg sync.WaitGroup
	var ok, notFound atomic.Int32
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := d.Approve(ctx, r.ApprovalToken)
			switch {
			case err == nil && res.Status == StatusOK:
				ok.Add(1)
			case errors.Is(err, ErrApprovalNotFound) && res.Status == StatusRejected && res.Reason == "approval_not_found":
				notFound.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || notFound.Load() != 15 || ex.calls() != 1 {
		t.Fatalf("ok=%d notFound=%d executor calls=%d", ok.Load(), notFound.Load(), ex.calls())
	}
	if got := ex.last(t).Code; got != "ls /workspace" {
		t.Errorf("approved call ran %q", got)
	}
	// reject after approve: already resolved
	if _, err := d.Reject(ctx, r.ApprovalToken, "no"); !errors.Is(err, ErrApprovalNotFound) {
		t.Errorf("reject after approve: %v", err)
	}
}

func TestApprovalReject(t *testing.T) {
	cfg := testConfig()
	cfg.ApprovalTools = []string{ToolRunPython}
	ex := okExecutor()
	d, _ := newTestDispatcher(t, cfg, ex)
	ctx := context.Background()
	r := d.Run(ctx, call(ToolRunPython, map[string]any{"code": "print(1)"}))
	res, err := d.Reject(ctx, r.ApprovalToken, "not during business hours")
	if err != nil || res.Status != StatusRejected || res.Reason != "approval_rejected" || !strings.Contains(res.Content, "business hours") || res.CallID != "call_1" {
		t.Fatalf("reject: %+v %v", res, err)
	}
	if _, err := d.Approve(ctx, r.ApprovalToken); !errors.Is(err, ErrApprovalNotFound) {
		t.Errorf("approve after reject: %v", err)
	}
	if _, err := d.Approve(ctx, "apv_bogus"); !errors.Is(err, ErrApprovalNotFound) {
		t.Errorf("bogus token: %v", err)
	}
	if ex.calls() != 0 {
		t.Errorf("rejected call ran")
	}
}

func TestApprovalByRuleAndExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	cfg := testConfig()
	cfg.Policy.RequireApproval = []string{policy.RuleShellPrivilege}
	cfg.ApprovalTTL = time.Minute
	cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ex := okExecutor()
	d, _ := newTestDispatcher(t, cfg, ex)
	ctx := context.Background()
	// a rule marked for approval holds the call...
	r := d.Run(ctx, call(ToolExecuteShell, map[string]any{"command": "sudo id"}))
	if r.Status != StatusPendingApproval || !strings.Contains(r.Content, policy.RuleShellPrivilege) {
		t.Fatalf("rule approval: %+v", r)
	}
	// ...but a refusing rule in the same call still refuses
	r2 := d.Run(ctx, call(ToolExecuteShell, map[string]any{"command": "sudo rm -rf /"}))
	if r2.Status != StatusRejected || r2.Reason != "policy:"+policy.RuleShellRmRoot {
		t.Fatalf("mixed rules: %+v", r2)
	}
	res, err := d.Approve(ctx, r.ApprovalToken)
	if err != nil || res.Status != StatusOK || ex.calls() != 1 {
		t.Fatalf("approve: %+v %v", res, err)
	}
	// expiry
	r = d.Run(ctx, call(ToolExecuteShell, map[string]any{"command": "sudo id"}))
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if _, err := d.Approve(ctx, r.ApprovalToken); !errors.Is(err, ErrApprovalNotFound) {
		t.Errorf("expired token: %v", err)
	}
	if ex.calls() != 1 {
		t.Errorf("expired call ran")
	}
}
