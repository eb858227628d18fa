package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/environments/builder"
	"github.com/airlock-dev/airlock/environments/envtest"
)

// envCommandSetup skips without Docker, pins the base images for the
// command and returns a temp dir.
func envCommandSetup(t *testing.T) string {
	t.Helper()
	envtest.Docker(t)
	bases := envtest.Bases()
	t.Setenv("AIRLOCK_PYTHON_IMAGE", bases["python"])
	t.Setenv("AIRLOCK_SHELL_IMAGE", bases["shell"])
	return t.TempDir()
}

// TestEnvCommand runs `airlock env build|list|rm` on the real daemon with
// a shell environment of files only (no network): a build, a no-op
// rebuild, the list, a JSON record, the removal; and the refusals.
func TestEnvCommand(t *testing.T) {
	dir := envCommandSetup(t)
	data := filepath.Join(dir, "state")
	name := envtest.Name("t-cli")
	spec := filepath.Join(dir, "env.yaml")
	if err := os.WriteFile(filepath.Join(dir, "x.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec, []byte("name: "+name+"\nbase: shell\nfiles: {/opt/cli/x.txt: ./x.txt}\ncheck_commands: [\"grep -q hi /opt/cli/x.txt\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	envRun := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"env", args[0], "--data-dir", data}, args[1:]...), strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	t.Cleanup(func() { envRun("rm", name) })

	code, out, errs := envRun("build", spec)
	if code != 0 || !strings.Contains(out, name+": built "+builder.ImageRepo(name)+":") {
		t.Fatalf("build: %d %q %q", code, out, errs)
	}
	for _, step := range []string{"step prepare", "step files", "step commit", "step checks"} {
		if !strings.Contains(errs, step) { // not a terminal: one line per step
			t.Errorf("build output lacks %q: %q", step, errs)
		}
	}
	if code, out, errs = envRun("build", spec); code != 0 || !strings.Contains(out, "up to date") {
		t.Errorf("rebuild: %d %q %q", code, out, errs)
	}
	code, out, _ = envRun("list")
	if code != 0 || !strings.Contains(out, "NAME") || !strings.Contains(out, "BUILD TIME") || !strings.Contains(out, name) || !strings.Contains(out, "(built-in)") {
		t.Errorf("list: %d %q", code, out)
	}
	code, out, _ = envRun("list", "--json")
	var list []environments.Record
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 3 || list[2].Name != name || list[2].Hash == "" {
		t.Errorf("list --json: %d %q", code, out)
	}
	if code, out, errs = envRun("rm", name); code != 0 || out != "removed "+name+"\n" {
		t.Errorf("rm: %d %q %q", code, out, errs)
	}
	if code, _, errs = envRun("rm", name); code != 1 || !strings.Contains(errs, "not found") {
		t.Errorf("rm again: %d %q", code, errs)
	}
	if code, _, errs = envRun("rm", "python"); code != 1 || !strings.Contains(errs, "built-in") {
		t.Errorf("rm python: %d %q", code, errs)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nuser: root\nentrypoint: [/bin/sh]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs = envRun("build", bad); code != 2 || !strings.Contains(errs, `unknown field "user"`) || !strings.Contains(errs, `unknown field "entrypoint"`) {
		t.Errorf("bad spec: %d %q", code, errs)
	}
	if code, _, _ = envRun("build"); code != 2 {
		t.Errorf("no file: %d", code)
	}
}

// TestEnvCommandFailedBuild names the failing step and check and exits 1
// (a check that fails: no network needed; a missing package is named the
// same way, see the environments tests).
func TestEnvCommandFailedBuild(t *testing.T) {
	dir := envCommandSetup(t)
	name := envtest.Name("t-clifail")
	spec := filepath.Join(dir, "env.yaml")
	if err := os.WriteFile(spec, []byte("name: "+name+"\nbase: shell\ncheck_commands: [\"shellcheck --version\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	state := filepath.Join(dir, "state")
	code := run([]string{"env", "build", "--data-dir", state, spec}, strings.NewReader(""), &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), `step checks failed: check command "shellcheck --version": status error, exit 127`) ||
		!strings.Contains(errb.String(), "the end of the build log:") {
		t.Errorf("failed build: %d %q", code, errb.String())
	}
	out.Reset()
	if code := run([]string{"env", "list", "--data-dir", state}, strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), "failed (checks)") {
		t.Errorf("list after a failed build: %q", out.String())
	}
	if code := run([]string{"env", "rm", "--data-dir", state, name}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Errorf("rm a failed environment: %q", errb.String())
	}
}
