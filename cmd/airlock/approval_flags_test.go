package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestServeApprovalFlags: --approval-tools and --require-approval reach
// the stack (the dispatcher's config), fall back to their environment
// variables, and an unknown name stops serve with exit 2 naming it.
func TestServeApprovalFlags(t *testing.T) {
	clearEnv(t)
	t.Setenv("AIRLOCK_APPROVAL_TOOLS", "")
	t.Setenv("AIRLOCK_REQUIRE_APPROVAL", "")
	var errb bytes.Buffer
	o, code, ok := parseServeFlags([]string{"--insecure-local", "--approval-tools", "execute_shell, run_python", "--require-approval", "shell.rm_root"}, envLookup, &errb)
	if !ok {
		t.Fatalf("parse: exit %d: %s", code, errb.String())
	}
	if !slices.Equal(o.stack.approvalTools, []string{"execute_shell", "run_python"}) || !slices.Equal(o.stack.requireApproval, []string{"shell.rm_root"}) {
		t.Fatalf("approval flags: %q %q", o.stack.approvalTools, o.stack.requireApproval)
	}

	t.Setenv("AIRLOCK_APPROVAL_TOOLS", "write_file")
	t.Setenv("AIRLOCK_REQUIRE_APPROVAL", "shell.privilege,shell.mkfs")
	o, _, ok = parseServeFlags([]string{"--insecure-local"}, envLookup, &errb)
	if !ok || !slices.Equal(o.stack.approvalTools, []string{"write_file"}) || !slices.Equal(o.stack.requireApproval, []string{"shell.privilege", "shell.mkfs"}) {
		t.Fatalf("approval env: %v %q %q", ok, o.stack.approvalTools, o.stack.requireApproval)
	}
	t.Setenv("AIRLOCK_APPROVAL_TOOLS", "")
	t.Setenv("AIRLOCK_REQUIRE_APPROVAL", "")

	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--insecure-local", "--approval-tools", "run_pyton"}, []string{"--approval-tools", `"run_pyton"`, "run_python"}},
		{[]string{"serve", "--insecure-local", "--require-approval", "shell.rm_rot"}, []string{"--require-approval", `"shell.rm_rot"`, "shell.rm_root"}},
	} {
		code, _, stderr := airlock(c.args...)
		if code != 2 {
			t.Errorf("airlock %v: exit %d, want 2; stderr %q", c.args, code, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("airlock %v: stderr %q lacks %q", c.args, stderr, w)
			}
		}
	}
	t.Setenv("AIRLOCK_REQUIRE_APPROVAL", "nope.rule")
	if code, _, stderr := airlock("serve", "--insecure-local"); code != 2 || !strings.Contains(stderr, `"nope.rule"`) {
		t.Errorf("bad AIRLOCK_REQUIRE_APPROVAL: exit %d %q", code, stderr)
	}
}
