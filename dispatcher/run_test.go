package dispatcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/sandbox"
)

func TestRunRefusals(t *testing.T) {
	cases := []struct {
		name       string
		call       Call
		wantReason string
		wantField  string // a key expected in Fields
		wantText   string // a substring expected in Content
	}{
		{"unknown tool", Call{Name: "rm_everything", Arguments: json.RawMessage(`{}`)}, "unknown_tool", "", "valid tools: execute_shell, list_directory, read_file, run_python, sqlite_query, write_file"},
		{"empty name", Call{Name: ""}, "unknown_tool", "", "valid tools:"},
		{"invalid json", Call{Name: ToolRunPython, Arguments: json.RawMessage(`{"code": "x"`)}, "invalid_json", "", "not valid JSON: unexpected EOF"},
		{"invalid json inside string", Call{Name: ToolRunPython, Arguments: json.RawMessage(`"{\"code\": 1,}"`)}, "invalid_json", "", "invalid character '}'"},
		{"trailing data", Call{Name: ToolRunPython, Arguments: json.RawMessage(`{"code":"x"} {}`)}, "invalid_json", "", "after the JSON value"},
		{"array arguments", Call{Name: ToolRunPython, Arguments: json.RawMessage(`[1,2]`)}, "invalid_arguments", "", "must be a JSON object, got an array"},
		{"missing required", Call{Name: ToolRunPython, Arguments: json.RawMessage(`{}`)}, "invalid_arguments", "/code", "required property is missing"},
		{"missing all required", Call{Name: ToolWriteFile, Arguments: json.RawMessage(`"{}"`)}, "invalid_arguments", "/content", "/path"},
		{"wrong type", Call{Name: ToolRunPython, Arguments: json.RawMessage(`{"code": 42}`)}, "invalid_arguments", "/code", "want string"},
		{"empty code", Call{Name: ToolRunPython, Arguments: json.RawMessage(`{"code": ""}`)}, "invalid_arguments", "/code", "minLength"},
		{"out of range", Call{Name: ToolRunPython, Arguments: json.RawMessage(`{"code": "1", "timeout_seconds": 100000}`)}, "over_ceiling", "", "timeout_seconds 100000 is over 300"},
		{"zero timeout", Call{Name: ToolExecuteShell, Arguments: json.RawMessage(`{"command": "ls", "timeout_seconds": 0}`)}, "invalid_arguments", "/timeout_seconds", "minimum"},
		{"non-integer", Call{Name: ToolExecuteShell, Arguments: json.RawMessage(`{"command": "ls", "timeout_seconds": 1.5}`)}, "invalid_arguments", "/timeout_seconds", "want integer"},
		{"bad enum", Call{Name: ToolWriteFile, Arguments: json.RawMessage(`{"path": "a", "content": "b", "mode": "truncate"}`)}, "invalid_arguments", "/mode", "overwrite"},
		{"unknown property", Call{Name: ToolReadFile, Arguments: json.RawMessage(`{"path": "a", "lines": 3}`)}, "invalid_arguments", "/lines", "valid properties: limit, offset, path"},
		{"several violations", Call{Name: ToolSQLiteQuery, Arguments: json.RawMessage(`{"database": 1, "max_rows": 0}`)}, "invalid_arguments", "/max_rows", "/query"},
		{"nul in path", Call{Name: ToolReadFile, Arguments: json.RawMessage(`{"path": "a\u0000b"}`)}, "invalid_arguments", "/path", "pattern"},
		{"too large", Call{Name: ToolRunPython, Arguments: json.RawMessage(`{"code": "` + strings.Repeat("x", 300<<10) + `"}`)}, "arguments_too_large", "", "limit"},
		{"write without session", Call{Name: ToolWriteFile, Arguments: json.RawMessage(`{"path": "a.txt", "content": "b"}`)}, "session_required", "", "needs a session"},
		{"multiple sql statements", Call{Name: ToolSQLiteQuery, Arguments: json.RawMessage(`{"database": "d.db", "query": "select 1; drop table t"}`)}, "policy:" + policy.RuleSQLMultiple, "", "one statement"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex := okExecutor()
			d, _ := newTestDispatcher(t, testConfig(), ex)
			r := d.Run(context.Background(), c.call)
			if r.Status != StatusRejected || r.Reason != c.wantReason {
				t.Fatalf("got %s %q (%s), want rejected %q", r.Status, r.Reason, r.Content, c.wantReason)
			}
			if c.wantField != "" {
				if _, ok := r.Fields[c.wantField]; !ok {
					t.Errorf("Fields %v lack %q", r.Fields, c.wantField)
				}
			}
			if !strings.Contains(r.Content, c.wantText) {
				t.Errorf("Content %q lacks %q", r.Content, c.wantText)
			}
			if ex.calls() != 0 {
				t.Errorf("a refused call reached the executor")
			}
		})
	}
}

func TestRunAcceptsArgumentForms(t *testing.T) {
	for _, raw := range []string{`{"code":"print(1)"}`, `"{\"code\":\"print(1)\"}"`, ` {"code":"print(1)"} `} {
		ex := okExecutor()
		d, _ := newTestDispatcher(t, testConfig(), ex)
		r := d.Run(context.Background(), Call{Name: ToolRunPython, Arguments: json.RawMessage(raw)})
		if r.Status != StatusOK {
			t.Fatalf("%s: got %s %q", raw, r.Status, r.Content)
		}
		if got := ex.last(t).Code; got != "print(1)" {
			t.Errorf("%s: code %q", raw, got)
		}
	}
	// empty arguments mean {} and list_directory has no required parameter
	ex := okExecutor()
	d, _ := newTestDispatcher(t, testConfig(), ex)
	for _, raw := range []string{"", "null", `""`} {
		r := d.Run(context.Background(), Call{Name: ToolListDirectory, Arguments: json.RawMessage(raw)})
		if r.Status != StatusOK {
			t.Errorf("%q: got %s %q", raw, r.Status, r.Content)
		}
	}
}

func TestRunBuildsRequest(t *testing.T) {
	ex := okExecutor()
	d, _ := newTestDispatcher(t, testConfig(), ex)
	c := sessionCall(ToolExecuteShell, map[string]any{"command": "ls", "timeout_seconds": 50})
	c.Mount = "/srv/in"
	c.Limits = core.Limits{Timeout: 10 * time.Second, Memory: 1 << 20}
	r := d.Run(context.Background(), c)
	if r.Status != StatusOK || r.CallID != "call_1" || r.Name != ToolExecuteShell {
		t.Fatalf("got %+v", r)
	}
	req := ex.last(t)
	if req.Op != core.OpExec || req.Language != core.Shell || req.Code != "ls" {
		t.Errorf("request %+v", req)
	}
	if req.Owner != "alice" || req.SessionID != "sess-1" || req.Mount != "/srv/in" {
		t.Errorf("caller context not passed: %+v", req)
	}
	if req.Limits.Timeout != 10*time.Second || req.Limits.Memory != 1<<20 {
		t.Errorf("call limits must lower the tool's: %+v", req.Limits)
	}
	// A call that names no timeout leaves it to the sandbox (the server
	// default, or in a session the session's own limit): the dispatcher
	// has no default of its own (it was 30 s against the sandbox's 10 s).
	d.Run(context.Background(), call(ToolRunPython, map[string]any{"code": "1"}))
	if got := ex.last(t).Limits.Timeout; got != 0 {
		t.Errorf("timeout %v without timeout_seconds, want 0 (the sandbox's default)", got)
	}
}

func TestRunRendersSandboxResult(t *testing.T) {
	ex := &fakeExecutor{res: core.Result{Status: core.StatusError, ExitCode: 2, Stdout: "partial\n", Stderr: "Traceback: boom\n",
		DurationMS: 12, Artifacts: []core.Artifact{{Name: "plot.png", MIME: "image/png", Size: 2048, Data: []byte("\x89PNG....")}}}}
	d, _ := newTestDispatcher(t, testConfig(), ex)
	r := d.Run(context.Background(), call(ToolRunPython, map[string]any{"code": "1/0"}))
	if r.Status != StatusError || r.Sandbox == nil || r.Sandbox.ExitCode != 2 {
		t.Fatalf("got %+v", r)
	}
	for _, want := range []string{"status: error (exit code 2, 12 ms)", "--- stdout ---\npartial", "--- stderr ---\nTraceback: boom", "plot.png (image/png, 2048 bytes)"} {
		if !strings.Contains(r.Content, want) {
			t.Errorf("content lacks %q:\n%s", want, r.Content)
		}
	}
	if strings.Contains(r.Content, "PNG....") {
		t.Errorf("artifact bytes leaked into content")
	}
	for _, s := range []core.Status{core.StatusTimeout, core.StatusOOM, core.StatusOutputLimit, core.StatusRejected} {
		ex.res = core.Result{Status: s, Message: "why"}
		if r := d.Run(context.Background(), call(ToolRunPython, map[string]any{"code": "1"})); string(r.Status) != string(s) || !strings.Contains(r.Content, "message: why") {
			t.Errorf("%s: got %s %q", s, r.Status, r.Content)
		}
	}
	ex.res = core.Result{Status: "weird"}
	if r := d.Run(context.Background(), call(ToolRunPython, map[string]any{"code": "1"})); r.Status != StatusInternal || r.Err == nil {
		t.Errorf("unknown sandbox status: got %s err %v", r.Status, r.Err)
	}
}

func TestRunPlatformErrors(t *testing.T) {
	cases := []struct {
		err  error
		want Status
	}{
		{core.ErrUnavailable, StatusUnavailable},
		{fmt.Errorf("docker: %w", core.ErrUnavailable), StatusUnavailable},
		{sandbox.ErrImageMissing, StatusUnavailable},
		{core.ErrBusy, StatusBusy},
		{core.ErrSessionNotFound, StatusSessionNotFound},
		{fmt.Errorf("worker gone: %w", core.ErrSessionLost), StatusSessionLost},
		{core.E("worker", core.ErrSessionLost, errors.New("gone")), StatusSessionLost},
		{fmt.Errorf("wrapped: %w", core.E("queue", core.ErrBusy, nil)), StatusBusy},
		{core.Code("nonsense"), StatusInternal},
		{context.DeadlineExceeded, StatusUnavailable},
		{errors.New("boom"), StatusInternal},
	}
	for _, c := range cases {
		ex := &fakeExecutor{err: c.err}
		d, _ := newTestDispatcher(t, testConfig(), ex)
		r := d.Run(context.Background(), call(ToolRunPython, map[string]any{"code": "1"}))
		if r.Status != c.want {
			t.Errorf("%v: got %s, want %s", c.err, r.Status, c.want)
		}
		if r.Err == nil || !errors.Is(r.Err, c.err) {
			t.Errorf("%v: Result.Err %v does not wrap the executor error", c.err, r.Err)
		}
		if !strings.Contains(r.Content, "status: "+string(c.want)) {
			t.Errorf("%v: content %q", c.err, r.Content)
		}
	}
	d, _ := newTestDispatcher(t, testConfig(), nil)
	if r := d.Run(context.Background(), call(ToolRunPython, map[string]any{"code": "1"})); r.Status != StatusUnavailable || !errors.Is(r.Err, ErrNoExecutor) {
		t.Errorf("nil executor: got %s %v", r.Status, r.Err)
	}
}

func TestRunHandlerErrorsAndPanics(t *testing.T) {
	reg := NewRegistry()
	obj := map[string]any{"type": "object", "properties": map[string]any{}}
	reg.Register(Tool{Name: "fails", Description: "d", Parameters: obj, Prepare: PrepareFunc(func(context.Context, Invocation) (Action, error) {
		return Action{}, errors.New("disk on fire")
	})})
	reg.Register(Tool{Name: "panics", Description: "d", Parameters: obj, Prepare: PrepareFunc(func(context.Context, Invocation) (Action, error) {
		var m map[string]int
		m["x"] = 1
		return Action{}, nil
	})})
	reg.Register(Tool{Name: "refuses", Description: "d", Parameters: obj, Prepare: PrepareFunc(func(context.Context, Invocation) (Action, error) {
		return Action{}, Refuse("not_today", "come back tomorrow")
	})})
	reg.Register(Tool{Name: "answers", Description: "d", Parameters: obj, Prepare: PrepareFunc(func(context.Context, Invocation) (Action, error) {
		return Action{Content: "42"}, nil
	})})
	reg.Register(Tool{Name: "runs", Description: "d", Parameters: obj, Prepare: PrepareFunc(func(context.Context, Invocation) (Action, error) {
		return Action{Request: &core.Request{Language: core.Shell, Code: "x"}}, nil
	})})
	ex := &fakeExecutor{fn: func(core.Request) (core.Result, error) { panic("executor exploded") }}
	d := NewWithRegistry(testConfig(), reg, ex, nil)
	ctx := context.Background()
	if r := d.Run(ctx, Call{Name: "fails"}); r.Status != StatusError || r.Reason != "handler_error" || !strings.Contains(r.Content, "disk on fire") {
		t.Errorf("fails: %+v", r)
	}
	if r := d.Run(ctx, Call{Name: "panics"}); r.Status != StatusInternal || r.Reason != "panic" || !errors.Is(r.Err, ErrPanic) {
		t.Errorf("panics: %+v", r)
	}
	if r := d.Run(ctx, Call{Name: "refuses"}); r.Status != StatusRejected || r.Reason != "not_today" {
		t.Errorf("refuses: %+v", r)
	}
	if r := d.Run(ctx, Call{Name: "answers"}); r.Status != StatusOK || r.Content != "42" || ex.calls() != 0 {
		t.Errorf("answers: %+v", r)
	}
	if r := d.Run(ctx, Call{Name: "runs"}); r.Status != StatusInternal || !errors.Is(r.Err, ErrPanic) {
		t.Errorf("executor panic: %+v", r)
	}
}

func TestRunInSandboxPolicyMarker(t *testing.T) {
	ex := &fakeExecutor{res: core.Result{Status: core.StatusError, ExitCode: 3,
		Stderr: "AIRLOCK_POLICY path.read_outside_roots: path 'link' resolves (through symlinks) to '/etc/passwd'\n"}}
	d, _ := newTestDispatcher(t, testConfig(), ex)
	r := d.Run(context.Background(), call(ToolReadFile, map[string]any{"path": "link"}))
	if r.Status != StatusRejected || r.Reason != "policy:path.read_outside_roots" || !strings.Contains(r.Content, "through symlinks") {
		t.Fatalf("file tool marker: %+v", r)
	}
	// user code printing the marker does not turn into a policy refusal
	r = d.Run(context.Background(), call(ToolRunPython, map[string]any{"code": "x"}))
	if r.Status != StatusError || strings.HasPrefix(r.Reason, "policy:") {
		t.Fatalf("user code marker: %+v", r)
	}
}

// TestCallLimitsAreCeilings: a call's limits only lower the configured
// ceiling (the server defaults); a transport's Call.Ceiling may grant more.
func TestCallLimitsAreCeilings(t *testing.T) {
	cfg := testConfig()
	cfg.Ceiling = core.Limits{Memory: 256 << 20, CPUs: 1, Pids: 128}
	ex := okExecutor()
	d, _ := newTestDispatcher(t, cfg, ex)
	c := call(ToolRunPython, map[string]any{"code": "1"})
	c.Limits = core.Limits{Memory: 2 << 30, CPUs: 2, Pids: 64}
	d.Run(context.Background(), c)
	got := ex.last(t).Limits
	if got.Memory != 256<<20 || got.CPUs != 1 || got.Pids != 64 {
		t.Fatalf("limits over the ceiling passed: %+v", got)
	}
	c.Ceiling = core.Limits{Memory: 1 << 30}
	d.Run(context.Background(), c)
	if got := ex.last(t).Limits; got.Memory != 1<<30 || got.CPUs != 1 {
		t.Fatalf("policy ceiling: %+v", got)
	}
}
