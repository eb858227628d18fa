package api

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/keys"
)

// countingExecutor answers every request ok and counts them.
type countingExecutor struct{ n atomic.Int32 }

func (e *countingExecutor) Exec(context.Context, core.Request) (core.Result, error) {
	e.n.Add(1)
	return core.Result{Status: core.StatusOK, Stdout: "ran\n"}, nil
}

// realDispatcher adapts a real *dispatcher.Dispatcher to Deps.Dispatcher.
type realDispatcher struct{ *dispatcher.Dispatcher }

func (d realDispatcher) ToolsJSON() []map[string]any { return d.Registry().OpenAIToolsJSON() }

// TestKeyPolicyApprovalHoldsToolCalls: alice's keys-file line says
// approval_tools=run_python require_approval=shell.privilege; through the
// real dispatcher her run_python call and her sudo command wait for
// approval (pending_approval with a token, nothing ran), bob's same calls
// run or are refused, and rejecting with a reason records the reason.
func TestKeyPolicyApprovalHoldsToolCalls(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keys")
	lines := "alice:" + keyAlice + " approval_tools=run_python require_approval=shell.privilege\nbob:" + keyBob + "\n"
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	ks, err := keys.Load(file, "")
	if err != nil {
		t.Fatal(err)
	}
	if p := ks.Policy("alice"); p == nil || strings.Join(p.ApprovalTools, ",") != "run_python" || strings.Join(p.RequireApproval, ",") != "shell.privilege" {
		t.Fatalf("alice's policy %+v", p)
	}
	ex := &countingExecutor{}
	disp := dispatcher.New(dispatcher.DefaultConfig(), ex, nil)
	h := newHarness(t, func(c *Config, d *Deps) { c.Keys = ks; d.Dispatcher = realDispatcher{disp} })
	call := func(key, tool, args string) map[string]any {
		t.Helper()
		return h.do(key, "POST", "/v1/tool-calls", map[string]any{"type": "function",
			"function": map[string]any{"name": tool, "arguments": args}}).must(t, 200).JSON(t)["result"].(map[string]any)
	}

	r := call(keyAlice, "run_python", `{"code":"print(1)"}`)
	if r["status"] != "pending_approval" || r["approval_token"] == nil || ex.n.Load() != 0 {
		t.Fatalf("alice's run_python: %v (executed %d)", r, ex.n.Load())
	}
	if r := call(keyBob, "run_python", `{"code":"print(1)"}`); r["status"] != "ok" || ex.n.Load() != 1 {
		t.Fatalf("bob's run_python: %v", r)
	}
	sudo := call(keyAlice, "execute_shell", `{"command":"sudo id"}`)
	if sudo["status"] != "pending_approval" || ex.n.Load() != 1 {
		t.Fatalf("alice's sudo: %v", sudo)
	}
	if r := call(keyBob, "execute_shell", `{"command":"sudo id"}`); r["status"] != "rejected" || r["reason"] != "policy:shell.privilege" {
		t.Fatalf("bob's sudo: %v", r)
	}

	res, err := disp.Reject(context.Background(), sudo["approval_token"].(string), "no root on this host")
	if err != nil || res.Status != dispatcher.StatusRejected || !strings.Contains(res.Content, "no root on this host") {
		t.Fatalf("reject: %+v %v", res, err)
	}
	res, err = disp.Approve(context.Background(), r["approval_token"].(string))
	if err != nil || res.Status != dispatcher.StatusOK || ex.n.Load() != 2 {
		t.Fatalf("approve: %+v %v", res, err)
	}
}

// TestKeysFileApprovalNames: an unknown tool or rule in the keys file
// fails loading, naming it.
func TestKeysFileApprovalNames(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"alice:" + keyAlice + " approval_tools=run_pyhton", `"run_pyhton"`},
		{"alice:" + keyAlice + " require_approval=shell.rm_root,bogus.rule", `"bogus.rule"`},
	} {
		file := filepath.Join(t.TempDir(), "keys")
		if err := os.WriteFile(file, []byte(c.line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := keys.Load(file, ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error naming %s", c.line, err, c.want)
		}
	}
}
