package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/sandbox"
)

// airlockBin is the airlock binary TestMain built for this run: static
// (CGO_ENABLED=0, -trimpath), so the same build also goes into the compose
// test's server image.
var airlockBin string

// TestMain builds ./cmd/airlock once into a temporary folder. One build
// for every test: a second, static one for the compose images compiled
// the whole module again (15 min of a 25 min run on a busy machine).
func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

// runMain builds the binary, runs the tests and removes the build folder.
func runMain(m *testing.M) int {
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "airlock-e2e-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	airlockBin = filepath.Join(dir, "airlock")
	build := exec.Command(goTool(), "build", "-trimpath", "-o", airlockBin, "./cmd/airlock")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build ./cmd/airlock: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// repoRoot is the folder holding go.mod: from `go env GOMOD`, else from
// this file's location.
func repoRoot() (string, error) {
	if out, err := exec.Command(goTool(), "env", "GOMOD").Output(); err == nil {
		if gomod := strings.TrimSpace(string(out)); gomod != "" && gomod != os.DevNull {
			return filepath.Dir(gomod), nil
		}
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("cannot locate the repository root")
	}
	return filepath.Dir(filepath.Dir(file)), nil
}

// goTool is the go command: the one on PATH, else the toolchain's own.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// missing skips the test because a requirement is absent, or fails it in
// CI (CI=true), where every requirement must be present.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true, so this fails)", msg)
	}
	t.Skipf("skipping: %s", msg)
}

// requireDocker returns a Docker client after checking that the daemon
// answers and the sandbox images exist.
func requireDocker(t *testing.T) *client.Client {
	t.Helper()
	dc, err := sandbox.NewDockerClient()
	if err != nil {
		missing(t, "no Docker client: %v", err)
	}
	t.Cleanup(func() { _ = dc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	if _, err := dc.Ping(ctx); err != nil {
		missing(t, "the Docker daemon does not answer: %v", err)
	}
	for _, img := range []string{envOr("AIRLOCK_PYTHON_IMAGE", "airlock/python:latest"), envOr("AIRLOCK_SHELL_IMAGE", "airlock/shell:latest")} {
		if _, err := dc.ImageInspect(ctx, img); err != nil {
			missing(t, "sandbox image %s is not built (run `make images`): %v", img, err)
		}
	}
	return dc
}

// envOr returns $k, or def when it is empty.
func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
