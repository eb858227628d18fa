package dispatcher

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// TestTimeoutArgumentCeiling: the tool argument timeout_seconds can never
// raise the timeout past the call's ceiling (the server defaults, or the
// key's policy through Call.Ceiling): over it the call is rejected with
// core.ErrInvalid (a 400 for the API) naming the ceiling, and nothing
// runs. Absurd values are refused by the schema.
func TestTimeoutArgumentCeiling(t *testing.T) {
	ex := okExecutor()
	cfg := testConfig()
	cfg.Ceiling = core.Limits{Timeout: 10 * time.Second, Memory: 256 << 20}
	d, _ := newTestDispatcher(t, cfg, ex)
	for _, tool := range []string{ToolRunPython, ToolExecuteShell} {
		for _, c := range []Call{call(tool, map[string]any{toolArg(tool): "sleep 32", "timeout_seconds": 300}),
			sessionCall(tool, map[string]any{toolArg(tool): "sleep 32", "timeout_seconds": 11})} {
			r := d.Run(context.Background(), c)
			if r.Status != StatusRejected || r.Reason != "over_ceiling" || r.Code != core.ErrInvalid ||
				!strings.Contains(r.Content, "timeout_seconds") || !strings.Contains(r.Content, "is over 10") {
				t.Errorf("%s over the ceiling: %s %s %q: %s", tool, r.Status, r.Reason, r.Code, r.Content)
			}
		}
		// Past the schemas' maximum (300) too, the answer names the
		// ceiling, not the schema: the same 400 as any value over it.
		for _, asked := range []any{301, 1000, 9.3e9} {
			r := d.Run(context.Background(), call(tool, map[string]any{toolArg(tool): "x", "timeout_seconds": asked}))
			if r.Status != StatusRejected || r.Reason != "over_ceiling" || r.Code != core.ErrInvalid || !strings.Contains(r.Content, "is over 10") {
				t.Errorf("%s timeout %v past the schema: %s %s %q: %s", tool, asked, r.Status, r.Reason, r.Code, r.Content)
			}
		}
		// A timeout that is no number is the schema's to refuse.
		r := d.Run(context.Background(), call(tool, map[string]any{toolArg(tool): "x", "timeout_seconds": "soon"}))
		if r.Status != StatusRejected || r.Reason != "invalid_arguments" || r.Fields["/timeout_seconds"] == "" {
			t.Errorf("%s timeout not a number: %s %s %v", tool, r.Status, r.Reason, r.Fields)
		}
	}
	if n := ex.calls(); n != 0 {
		t.Fatalf("%d calls over the ceiling ran", n)
	}
	// At or under the ceiling the argument is the timeout.
	if r := d.Run(context.Background(), call(ToolExecuteShell, map[string]any{"command": "x", "timeout_seconds": 10})); r.Status != StatusOK || ex.last(t).Limits.Timeout != 10*time.Second {
		t.Errorf("at the ceiling: %s %v", r.Status, ex.last(t).Limits.Timeout)
	}
	// A key whose policy grants more may use it, and not more.
	c := call(ToolExecuteShell, map[string]any{"command": "x", "timeout_seconds": 60})
	c.Ceiling = core.Limits{Timeout: time.Minute}
	if r := d.Run(context.Background(), c); r.Status != StatusOK || ex.last(t).Limits.Timeout != time.Minute {
		t.Errorf("granted 60 s: %s %s %v", r.Status, r.Content, ex.last(t).Limits.Timeout)
	}
	c = call(ToolExecuteShell, map[string]any{"command": "x", "timeout_seconds": 61})
	c.Ceiling = core.Limits{Timeout: time.Minute}
	if r := d.Run(context.Background(), c); r.Code != core.ErrInvalid || !strings.Contains(r.Content, "is over 60") {
		t.Errorf("over a granted 60 s: %s %s", r.Status, r.Content)
	}
	// The transport's limits still only lower what the argument asks for.
	c = call(ToolExecuteShell, map[string]any{"command": "x", "timeout_seconds": 8})
	c.Limits = core.Limits{Timeout: 5 * time.Second}
	if r := d.Run(context.Background(), c); r.Status != StatusOK || ex.last(t).Limits.Timeout != 5*time.Second {
		t.Errorf("call limits lower the argument: %s %v", r.Status, ex.last(t).Limits.Timeout)
	}
	// The schema names the ceiling, and has no default of its own.
	tl, _ := d.Registry().Lookup(ToolRunPython)
	p := properties(tl.Parameters)["timeout_seconds"].(map[string]any)
	if _, has := p["default"]; has || !strings.Contains(p["description"].(string), "key's limit") {
		t.Errorf("timeout_seconds schema: %v", p)
	}
}

// TestPlatformStatusIsTheCode: a platform failure's Status is its
// core.Code's name (session_not_found for a missing session), and the
// Result carries the Code itself.
func TestPlatformStatusIsTheCode(t *testing.T) {
	for code, want := range map[core.Code]Status{
		core.ErrBusy: StatusBusy, core.ErrQuota: StatusBusy, core.ErrRateLimited: StatusBusy,
		core.ErrUnavailable: StatusUnavailable, core.ErrDeadline: StatusUnavailable, core.ErrCanceled: StatusUnavailable,
		core.ErrSessionLost: StatusSessionLost, core.ErrNotFound: StatusSessionNotFound, core.ErrInternal: StatusInternal,
		core.ErrInvalid: StatusInternal,
	} {
		ex := &fakeExecutor{err: core.E("test", code, nil)}
		d, _ := newTestDispatcher(t, testConfig(), ex)
		r := d.Run(context.Background(), call(ToolRunPython, map[string]any{"code": "1"}))
		if r.Status != want || r.Code != code || r.Err == nil {
			t.Errorf("%s: status %s code %q err %v, want %s", code, r.Status, r.Code, r.Err, want)
		}
	}
	for _, s := range []Status{StatusBusy, StatusUnavailable, StatusSessionLost, StatusInternal} {
		if !isCode(string(s)) {
			t.Errorf("status %s is not a core.Code", s)
		}
	}
	if r := (Result{Status: StatusOK}); r.Code != "" {
		t.Errorf("an outcome has code %q", r.Code)
	}
}

// isCode reports whether s names a core.Code.
func isCode(s string) bool {
	for _, c := range core.Codes() {
		if string(c) == s {
			return true
		}
	}
	return false
}
