package dispatcher

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/policy"
)

// TestApprovalPerCall: a call's own ApprovalTools and RequireApproval (the
// caller's keys-file policy) hold it; the same call without them runs or
// is refused as the server config says.
func TestApprovalPerCall(t *testing.T) {
	ex := okExecutor()
	d, _ := newTestDispatcher(t, testConfig(), ex)
	ctx := context.Background()

	c := call(ToolRunPython, map[string]any{"code": "print(1)"})
	c.ApprovalTools = []string{ToolRunPython}
	r := d.Run(ctx, c)
	if r.Status != StatusPendingApproval || r.ApprovalToken == "" || ex.calls() != 0 {
		t.Fatalf("per-call approval tool: %+v", r)
	}
	res, err := d.Approve(ctx, r.ApprovalToken)
	if err != nil || res.Status != StatusOK || ex.calls() != 1 {
		t.Fatalf("approve: %+v %v", res, err)
	}
	if r := d.Run(ctx, call(ToolRunPython, map[string]any{"code": "print(1)"})); r.Status != StatusOK {
		t.Fatalf("without the override: %+v", r)
	}

	c = call(ToolExecuteShell, map[string]any{"command": "sudo id"})
	if r := d.Run(ctx, c); r.Status != StatusRejected || r.Reason != "policy:"+policy.RuleShellPrivilege {
		t.Fatalf("without the override the rule refuses: %+v", r)
	}
	c.RequireApproval = []string{policy.RuleShellPrivilege}
	r = d.Run(ctx, c)
	if r.Status != StatusPendingApproval || !strings.Contains(r.Content, policy.RuleShellPrivilege) {
		t.Fatalf("per-call rule approval: %+v", r)
	}
	res, err = d.Reject(ctx, r.ApprovalToken, "not on prod")
	if err != nil || res.Status != StatusRejected || !strings.Contains(res.Content, "not on prod") || ex.calls() != 2 {
		t.Fatalf("reject: %+v %v", res, err)
	}
}

func TestCheckApprovalNames(t *testing.T) {
	if err := CheckApprovalNames([]string{ToolRunPython, ToolExecuteShell}, []string{policy.RuleShellRmRoot}); err != nil {
		t.Fatal(err)
	}
	if err := CheckApprovalNames([]string{"run_pyton"}, nil); err == nil || !strings.Contains(err.Error(), `"run_pyton"`) {
		t.Fatalf("bad tool: %v", err)
	}
	if err := CheckApprovalNames(nil, []string{"shell.nope"}); err == nil || !strings.Contains(err.Error(), `"shell.nope"`) {
		t.Fatalf("bad rule: %v", err)
	}
	if got, _ := json.Marshal(SplitNames(" a, ,b ")); string(got) != `["a","b"]` {
		t.Fatalf("SplitNames: %s", got)
	}
}
