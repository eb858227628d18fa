package dispatcher

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/policy"
)

func TestAuditRecords(t *testing.T) {
	cfg := redactConfig()
	ex := okExecutor()
	d, buf := newTestDispatcher(t, cfg, ex)
	ctx := context.Background()
	secretArg := "print('" + planted["configured"] + "')"
	c1 := call(ToolRunPython, map[string]any{"code": secretArg})
	d.Run(ctx, c1)
	d.Run(ctx, call(ToolExecuteShell, map[string]any{"command": "sudo id"}))
	d.Run(ctx, Call{ID: "x", Name: planted["openai_key"]})
	var recs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(buf.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, m)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records:\n%s", len(recs), buf)
	}
	sum := sha256.Sum256(c1.Arguments)
	want := map[string]any{"msg": "tool_call", "caller": "test", "owner": "alice", "tool": ToolRunPython, "call_id": "call_1",
		"args_sha256": hex.EncodeToString(sum[:]), "decision": "executed", "status": "ok"}
	for k, v := range want {
		if recs[0][k] != v {
			t.Errorf("record[%s] = %v, want %v", k, recs[0][k], v)
		}
	}
	if _, ok := recs[0]["duration_ms"]; !ok {
		t.Error("no duration")
	}
	if recs[1]["decision"] != "refused" || recs[1]["reason"] != "policy:"+policy.RuleShellPrivilege || recs[1]["status"] != "rejected" {
		t.Errorf("refusal record %v", recs[1])
	}
	for name, s := range map[string]string{"argument value": "print(", "configured secret": planted["configured"], "secret tool name": planted["openai_key"], "command": "sudo id"} {
		if strings.Contains(buf.String(), s) {
			t.Errorf("audit log contains %s", name)
		}
	}
}
