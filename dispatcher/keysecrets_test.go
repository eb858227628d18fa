package dispatcher

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/secrets"
)

// TestKeySecretsRedactedForTheirKeyOnly: a key's secrets (KeySecrets) are
// redacted from that key's results, live events and approved calls only:
// another key printing the same value sees it as it is, so no tenant can
// probe another's secrets. Server-wide secrets (Secrets) are redacted for
// everyone.
func TestKeySecretsRedactedForTheirKeyOnly(t *testing.T) {
	const aliceSecret, serverSecret = "alice-db-password-4711", "server-wide-secret-0815"
	printed := "a=" + aliceSecret + " s=" + serverSecret + "\n"
	ex := &streamExecutor{script: []core.Event{{Kind: "stdout", Text: printed}},
		result: core.Result{Status: core.StatusOK, Stdout: printed, Error: &core.ExecError{Name: "E", Value: aliceSecret}}}
	cfg := testConfig()
	cfg.Secrets = []string{serverSecret}
	asked := map[string]int{}
	cfg.KeySecrets = func(owner string) []string {
		asked[owner]++
		if owner == "alice" {
			return []string{aliceSecret}
		}
		return nil
	}
	cfg.ApprovalTools = []string{ToolExecuteShell}
	d, logs := newTestDispatcher(t, cfg, ex)
	run := func(owner, tool string) (Result, string) {
		var c collect
		ctx := core.WithSink(context.Background(), c.sink)
		args, _ := json.Marshal(map[string]string{toolArg(tool): "1"})
		res := d.Run(ctx, Call{ID: "c1", Name: tool, Owner: owner, Arguments: args})
		if tool == ToolExecuteShell {
			res, _ = d.Approve(ctx, res.ApprovalToken)
		}
		evs, _ := json.Marshal(c.events())
		all, _ := json.Marshal(res)
		return res, string(all) + res.Content + string(evs)
	}
	for _, tool := range []string{ToolRunPython, ToolExecuteShell} {
		_, alice := run("alice", tool)
		if strings.Contains(alice, aliceSecret) || strings.Contains(alice, serverSecret) || !strings.Contains(alice, "a="+secrets.Mark) {
			t.Errorf("%s: alice's own result: %s", tool, alice)
		}
		_, bob := run("bob", tool)
		if !strings.Contains(bob, "a="+aliceSecret) || strings.Contains(bob, serverSecret) || !strings.Contains(bob, "s="+secrets.Mark) {
			t.Errorf("%s: bob sees alice's secret redacted (an oracle for it) or the server's secret: %s", tool, bob)
		}
	}
	if asked["alice"] != 1 || asked["bob"] != 1 {
		t.Errorf("key secrets asked %v, want once per owner", asked)
	}
	if strings.Contains(logs.String(), aliceSecret) || strings.Contains(logs.String(), serverSecret) {
		t.Errorf("a secret in the audit log")
	}
}
