package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayoutNoDockerAboveSandbox: the packages above the sandbox (and the
// leaf types and the client) link no Docker package, so only sandbox/ and
// the commands that wire it talk to the daemon.
func TestLayoutNoDockerAboveSandbox(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"core", "api", "dispatcher", "agent", "client", "internal/jobs", "internal/policy", "queue", "environments"} {
		out, err := exec.Command("go", "list", "-deps", "github.com/airlock-dev/airlock/"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/docker/docker") {
				t.Errorf("%s depends on %s", pkg, dep)
				break
			}
		}
	}
}

// TestLayoutCoreIsALeaf: core imports nothing of this module.
func TestLayoutCoreIsALeaf(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", "{{join .Imports \"\\n\"}}", "github.com/airlock-dev/airlock/core").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, imp := range strings.Fields(string(out)) {
		if strings.Contains(imp, ".") {
			t.Errorf("core imports %s; it must stay a leaf of the standard library", imp)
		}
	}
}
