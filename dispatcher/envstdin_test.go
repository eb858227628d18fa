package dispatcher

import (
	"context"
	"strings"
	"testing"
)

// TestEnvAndStdinArguments: run_python and execute_shell take env and
// stdin, in one-shot and session calls, and hand them to the sandbox as
// the request's own; the next call carries none of them.
func TestEnvAndStdinArguments(t *testing.T) {
	ex := okExecutor()
	d, _ := newTestDispatcher(t, testConfig(), ex)
	for _, c := range []Call{
		call(ToolRunPython, map[string]any{"code": "1", "env": map[string]string{"MY_VAR": "v1", "OTHER": ""}, "stdin": "line 1\nline 2\n"}),
		sessionCall(ToolExecuteShell, map[string]any{"command": "cat", "env": map[string]string{"MY_VAR": "v1", "OTHER": ""}, "stdin": "line 1\nline 2\n"}),
	} {
		if r := d.Run(context.Background(), c); r.Status != StatusOK {
			t.Fatalf("%s: %s %s: %s", c.Name, r.Status, r.Reason, r.Content)
		}
		req := ex.last(t)
		if req.Env["MY_VAR"] != "v1" || len(req.Env) != 2 || req.Stdin != "line 1\nline 2\n" || req.SessionID != c.SessionID {
			t.Errorf("%s: request env %v stdin %q session %q", c.Name, req.Env, req.Stdin, req.SessionID)
		}
		d.Run(context.Background(), sessionCall(c.Name, map[string]any{toolArg(c.Name): "x"}))
		if req := ex.last(t); req.Env != nil || req.Stdin != "" {
			t.Errorf("%s: the next call carries env %v stdin %q", c.Name, req.Env, req.Stdin)
		}
	}
	r := d.RunPython(context.Background(), Call{Owner: "alice"}, RunPythonArgs{Code: "1", Env: map[string]string{"A": "b"}, Stdin: "in"})
	if req := ex.last(t); r.Status != StatusOK || req.Env["A"] != "b" || req.Stdin != "in" {
		t.Errorf("typed API: %s %v %q", r.Status, req.Env, req.Stdin)
	}
}

// TestEnvRefused: reserved and malformed names, non-string values and
// oversized env are refused before anything runs, naming the variable.
func TestEnvRefused(t *testing.T) {
	ex := okExecutor()
	d, _ := newTestDispatcher(t, testConfig(), ex)
	big := strings.Repeat("x", 40<<10)
	many := map[string]string{}
	for i := range 65 {
		many["V"+strings.Repeat("X", i)] = "1"
	}
	for _, c := range []struct {
		env  any
		want []string
	}{
		{map[string]string{"PATH": "/tmp"}, []string{"PATH", "refused"}},
		{map[string]string{"HOME": "/root"}, []string{"HOME", "refused"}},
		{map[string]string{"AIRLOCK_TOKEN": "x"}, []string{"AIRLOCK_TOKEN", "AIRLOCK_*"}},
		{map[string]string{"PYTHONPATH": "/tmp"}, []string{"PYTHONPATH", "PYTHON*"}},
		{map[string]string{"PYTHONHASHSEED": "0"}, []string{"PYTHONHASHSEED", "PYTHON*"}},
		{map[string]string{"LD_PRELOAD": "/tmp/x.so", "OK": "1"}, []string{"LD_PRELOAD", "LD_*"}},
		{map[string]string{"my_var": "x"}, []string{"/env", "my_var"}},
		{map[string]string{"1BAD": "x"}, []string{"/env", "1BAD"}},
		{map[string]any{"N": 3}, []string{"/env/N", "string"}},
		{map[string]string{"BIG": big}, []string{"/env/BIG", "maxLength"}},
		{map[string]string{"A": big[:30<<10], "B": big[:30<<10], "C": big[:10<<10]}, []string{"at most 65536"}},
		{many, []string{"/env", "maxProperties"}},
		{"A=1", []string{"/env", "object"}},
	} {
		for _, tool := range []string{ToolRunPython, ToolExecuteShell} {
			r := d.Run(context.Background(), call(tool, map[string]any{toolArg(tool): "1", "env": c.env}))
			if r.Status != StatusRejected || r.Reason != "invalid_arguments" {
				t.Errorf("%s env %.60v: %s %s: %s", tool, c.env, r.Status, r.Reason, r.Content)
				continue
			}
			for _, w := range c.want {
				if !strings.Contains(r.Content, w) {
					t.Errorf("%s env %.60v: %q lacks %q", tool, c.env, r.Content, w)
				}
			}
		}
	}
	if r := d.Run(context.Background(), call(ToolRunPython, map[string]any{"code": "1", "stdin": strings.Repeat("x", maxStdinChars+1)})); r.Reason != "invalid_arguments" || !strings.Contains(r.Content, "/stdin") {
		t.Errorf("oversized stdin: %s %s: %.200s", r.Status, r.Reason, r.Content)
	}
	if n := ex.calls(); n != 0 {
		t.Errorf("%d refused calls reached the executor", n)
	}
}

// toolArg is the code argument of a code tool.
func toolArg(tool string) string {
	if tool == ToolExecuteShell {
		return "command"
	}
	return "code"
}
