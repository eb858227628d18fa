package sandbox

import (
	"context"
	"github.com/airlock-dev/airlock/internal/testscale"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/policy"
)

// TestHookedSessionKernel (issue 26): after a session call hooks the
// kernel's machinery by name (attacks/hook_kernel.py: the object behind
// display(), json, ast, compile, dedent, subprocess, os.path.realpath), what
// later calls report still comes from what happened: a shell's exit 5, a
// SystemExit(7), a ZeroDivisionError; and the file tools (Airlock's generated
// programs) refuse a symlink to /etc/passwd, a listing through a link to /etc
// and a write through a link to /tmp, as their path policy says, while the
// session's own hooks stay in its state.
func TestHookedSessionKernel(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	e := newTestEngine(t, nil)
	s := openSession(t, e, "o")
	lim := core.Limits{Timeout: 30 * time.Second}
	if r := sexec(t, e, s.ID, "o", core.Python, attackCode(t, "hook_kernel.py"), lim); r.Status != core.StatusOK || !strings.HasPrefix(r.Stdout, "hooked") {
		t.Fatalf("hook call: %s", brief(r))
	}
	if r := sexec(t, e, s.ID, "o", core.Shell, "echo five; exit 5", lim); r.Status != core.StatusError || r.ExitCode != 5 || r.Stdout != "five\n" {
		t.Errorf("shell exit 5 in the hooked session: %s", brief(r))
	}
	if r := sexec(t, e, s.ID, "o", core.Python, "print('seven')\nraise SystemExit(7)  # HOOKVICTIM", lim); r.Status != core.StatusError || r.ExitCode != 7 || r.Stdout != "seven\n" {
		t.Errorf("SystemExit(7) in the hooked session: %s", brief(r))
	}
	if r := sexec(t, e, s.ID, "o", core.Python, "1 / 0  # HOOKVICTIM", lim); r.Status != core.StatusError || r.Error == nil || r.Error.Name != "ZeroDivisionError" {
		t.Errorf("1/0 in the hooked session: %s", brief(r))
	}

	pol := policy.New(policy.Config{WorkDir: "/work", InputDir: WorkspacePath})
	tool := func(body policy.Program, params map[string]any) core.Result {
		t.Helper()
		code, err := pol.GenPython(body, params, "/work")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
		defer cancel()
		r, err := e.SessionExec(ctx, core.Request{SessionID: s.ID, Owner: "o", Language: core.Python, Code: code, Generated: true, Limits: lim})
		if err != nil {
			t.Fatalf("tool call: %v", err)
		}
		return r
	}
	refused := func(what string, r core.Result, rule string) {
		t.Helper()
		got, _, ok := policy.ParseMarker(r.Stderr)
		if r.ExitCode != policy.MarkerExitCode || !ok || got != rule || strings.Contains(r.Stdout, "root:") {
			t.Errorf("%s in the hooked session: want refused by %s: %s", what, rule, brief(r))
		}
	}
	refused("read_file of a link to /etc/passwd", tool(policy.ReadFileProgram,
		map[string]any{"path": "passwd_link", "offset": 0, "limit": 500, "max_bytes": 1 << 20}), policy.RulePathReadOutside)
	refused("list_directory of a link to /etc", tool(policy.ListDirProgram,
		map[string]any{"path": "etc_link", "recursive": false, "max_entries": 200}), policy.RulePathReadOutside)
	refused("write_file through a link to /tmp", tool(policy.WriteFileProgram,
		map[string]any{"path": "tmp_link/pwned.txt", "content": "x", "mode": "overwrite"}), policy.RulePathWriteOutside)
	if r := tool(policy.WriteFileProgram, map[string]any{"path": "ok.txt", "content": "fine", "mode": "overwrite"}); r.Status != core.StatusOK {
		t.Errorf("write_file in /work: %s", brief(r))
	}
	if r := tool(policy.ReadFileProgram, map[string]any{"path": "ok.txt", "offset": 0, "limit": 500, "max_bytes": 1 << 20}); r.Status != core.StatusOK || r.Stdout != "fine\n" {
		t.Errorf("read_file in /work: %s", brief(r))
	}
	// The session's own state (its hooks included) is kept: the tools ran beside it.
	r := sexec(t, e, s.ID, "o", core.Python, "import os\nprint(os.path.realpath('/work/passwd_link'), os.path.exists('/tmp/pwned.txt'))", lim)
	if r.Stdout != "/work/passwd_link False\n" {
		t.Errorf("session state after the tools: %s", brief(r))
	}
}
