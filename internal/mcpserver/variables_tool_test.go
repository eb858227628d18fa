package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
)

// askExec is a fakeExec whose kernels answer a variables question.
type askExec struct{ *fakeExec }

func (a askExec) IntrospectSession(_ context.Context, _, id, _ string, q core.Introspect) (json.RawMessage, error) {
	if q.Kind != core.IntrospectVariables {
		return json.RawMessage(`{"status":"error"}`), nil
	}
	return json.RawMessage(`{"status":"ok","more":0,"variables":[{"name":"x","type":"int","module":"","size":28,"summary":"` + id + `"}]}`), nil
}

// TestListVariablesTool: list_variables answers the MCP session's own
// session's variables (the variable panel's listing, GET
// /v1/sessions/{id}/variables) without running a call; MCP had no way to
// ask, locally or remotely. A backend that cannot ask lists no such tool.
func TestListVariablesTool(t *testing.T) {
	fe := askExec{newFakeExec()}
	d := dispatcher.New(dispatcher.DefaultConfig(), fe, nil)
	srv, err := New(Config{}, Deps{Dispatcher: d, Executor: fe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	cs := (&harness{srv: srv, exec: fe.fakeExec, disp: d}).connect(t, "alice", nil)
	if names := toolNames(t, cs); !slices.Contains(names, ToolListVariables) {
		t.Fatalf("tools %v lack %s", names, ToolListVariables)
	}
	if res := call(t, cs, "run_python", map[string]any{"code": "x = 1"}); res.IsError {
		t.Fatalf("call: %s", text(t, res))
	}
	res := call(t, cs, ToolListVariables, map[string]any{})
	if res.IsError || !strings.Contains(text(t, res), `"name":"x"`) || !strings.Contains(text(t, res), `"summary":"s-1"`) {
		t.Fatalf("list_variables: %s", text(t, res))
	}
	if n := len(fe.sessionsUsed()); n != 1 {
		t.Fatalf("%d sessions ran calls, want the one", n)
	}
	if res := call(t, cs, ToolListVariables, map[string]any{"x": 1}); !res.IsError {
		t.Fatal("an argument was accepted")
	}
	plain := newHarness(t, nil)
	if names := toolNames(t, plain.connect(t, "alice", nil)); slices.Contains(names, ToolListVariables) {
		t.Fatalf("tools %v offer %s without a kernel to ask", names, ToolListVariables)
	}
}
