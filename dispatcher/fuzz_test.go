package dispatcher

import (
	"context"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/policy"
)

// FuzzRun feeds arbitrary tool names and argument bytes to Run, which must
// never panic and must always answer with a known status and valid,
// bounded content.
func FuzzRun(f *testing.F) {
	seeds := []struct{ name, args string }{
		{"run_python", `{"code":"print(1)"}`},
		{"run_python", `"{\"code\":\"import subprocess\"}"`},
		{"execute_shell", `{"command":"r''m -rf /"}`},
		{"execute_shell", `{"command":"echo cm0= | base64 -d | sh"}`},
		{"execute_shell", `{"command":":(){ :|:& };:"}`},
		{"execute_shell", `{"command":"$(echo rm) -rf / ; bash <<E\nrm -rf /\nE\n"}`},
		{"execute_shell", `{"command":"echo \"unterminated"}`},
		{"execute_shell", `{"command":"$'\\x72m' ${IFS} {a,b} $((1+1)) <(x) \\"}`},
		{"read_file", `{"path":"../../etc/shadow","offset":-1}`},
		{"write_file", `{"path":"/work/a","content":"x","mode":"append"}`},
		{"list_directory", ``},
		{"sqlite_query", `{"database":"a.db","query":"select 1; select 2"}`},
		{"sqlite_query", `{"database":"a.db","query":"select '`},
		{"nope", `{}`},
		{"", `null`},
		{"run_python", `{"code":"getattr(os, 'sys'+'tem')(f\"{__import__('pty')}\")"}`},
		{"run_python", `{"code":"'''\\x"}`},
		{"run_python", `[`},
		{"run_python", `{"code":1e999}`},
		{"run_python", "\xff\xfe"},
	}
	for _, s := range seeds {
		f.Add(s.name, []byte(s.args))
	}
	cfg := testConfig()
	cfg.MaxContentChars = 300
	cfg.MaxContentBytes = 600
	cfg.Policy.RequireApproval = []string{policy.RuleShellPrivilege}
	ex := &fakeExecutor{fn: func(req core.Request) (core.Result, error) {
		return core.Result{Status: core.StatusOK, Stdout: req.Code}, nil
	}}
	d := New(cfg, ex, nil)
	valid := map[Status]bool{StatusOK: true, StatusError: true, StatusTimeout: true, StatusOOM: true, StatusOutputLimit: true,
		StatusRejected: true, StatusPendingApproval: true, StatusBusy: true, StatusSessionNotFound: true, StatusSessionLost: true,
		StatusUnavailable: true, StatusInternal: true}
	f.Fuzz(func(t *testing.T, name string, args []byte) {
		for _, sess := range []string{"", "s1"} {
			r := d.Run(context.Background(), Call{Name: name, Arguments: json.RawMessage(args), SessionID: sess})
			if !valid[r.Status] {
				t.Fatalf("unknown status %q", r.Status)
			}
			if r.Status == StatusInternal {
				t.Fatalf("internal error (a bug): %v %s", r.Err, r.Content)
			}
			if utf8.RuneCountInString(r.Content) > 300 || len(r.Content) > 600 || !utf8.ValidString(r.Content) {
				t.Fatalf("content out of bounds: %d chars %d bytes", utf8.RuneCountInString(r.Content), len(r.Content))
			}
			if r.Status == StatusRejected && r.Reason == "" {
				t.Fatalf("refusal without reason: %s", r.Content)
			}
		}
	})
}

// FuzzTruncate feeds arbitrary text to Truncate, whose output must stay
// within both bounds. (The analysers' fuzz test is in internal/policy.)
func FuzzTruncate(f *testing.F) {
	for _, s := range []string{"", "abc", "héllo wörld", "\xff\xfe", "日本語のテキスト"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if out, _ := Truncate(s, 7, 11); utf8.RuneCountInString(out) > 7 || len(out) > 11 {
			t.Fatalf("Truncate out of bounds: %q", out)
		}
	})
}
