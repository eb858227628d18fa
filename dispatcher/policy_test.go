package dispatcher

import (
	"context"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/policy"
)

func TestShellRuleRefusalNamesRule(t *testing.T) {
	ex := okExecutor()
	d, _ := newTestDispatcher(t, testConfig(), ex)
	r := d.Run(context.Background(), call(ToolExecuteShell, map[string]any{"command": "sudo rm -rf /"}))
	if r.Status != StatusRejected || !strings.HasPrefix(r.Reason, "policy:shell.") {
		t.Fatalf("got %s %q, want rejected policy:shell.*", r.Status, r.Reason)
	}
	if !strings.Contains(r.Content, "shell.privilege") || !strings.Contains(r.Content, "shell.rm_root") {
		t.Errorf("content should name both rules: %q", r.Content)
	}
	if ex.calls() != 0 {
		t.Errorf("refused call reached the executor")
	}
}

func TestPythonPolicySwitch(t *testing.T) {
	cfg := testConfig()
	cfg.Policy.DisablePython = true
	ex := okExecutor()
	d, _ := newTestDispatcher(t, cfg, ex)
	r := d.Run(context.Background(), call(ToolRunPython, map[string]any{"code": "import subprocess"}))
	if r.Status != StatusOK || ex.calls() != 1 {
		t.Fatalf("DisablePython: got %s %q, executor calls %d", r.Status, r.Reason, ex.calls())
	}
	d, _ = newTestDispatcher(t, testConfig(), ex)
	r = d.Run(context.Background(), call(ToolRunPython, map[string]any{"code": "import subprocess"}))
	if r.Status != StatusRejected || r.Reason != "policy:"+policy.RulePySubprocess {
		t.Fatalf("default: got %s %q", r.Status, r.Reason)
	}
}

func TestShellPolicyConfigThroughRun(t *testing.T) {
	cfg := testConfig()
	cfg.Policy.Disabled = []string{policy.RuleShellPrivilege}
	d, _ := newTestDispatcher(t, cfg, okExecutor())
	r := d.Run(context.Background(), call(ToolExecuteShell, map[string]any{"command": "sudo rm -rf /"}))
	if r.Reason != "policy:"+policy.RuleShellRmRoot || strings.Contains(r.Content, policy.RuleShellPrivilege) {
		t.Fatalf("Disabled privilege: got %s %q: %s", r.Status, r.Reason, r.Content)
	}
	cfg = testConfig()
	cfg.Policy.DisableShell = true
	d, _ = newTestDispatcher(t, cfg, okExecutor())
	if r := d.Run(context.Background(), call(ToolExecuteShell, map[string]any{"command": "rm -rf /"})); r.Status != StatusOK {
		t.Fatalf("DisableShell: got %s %q", r.Status, r.Reason)
	}
}
