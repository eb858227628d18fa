package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/airlock-dev/airlock/internal/browsertest"
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
	flag.Parse()
	defaultParallel()
	if testing.Short() {
		fmt.Println("e2e: skipped under -short: every test here drives the real binary, Docker, Redis or Chromium")
		return 0
	}
	removeStaleStacks()
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
	chromium = browsertest.NewChromium()
	defer chromium.Close()
	return m.Run()
}

// chromium is the one Chromium this binary's browser tests share, a tab
// and browser context each (runMain makes and closes it).
var chromium *browsertest.Chromium

// e2eParallel is how many parallel e2e tests run at once unless -parallel
// is given. The tests wait on processes, Docker and Redis far more than
// they compute (a run used under a quarter of its wall time in CPU), so
// -parallel's default, GOMAXPROCS (2 on a small machine), left the cores
// idle; the timing-sensitive tests (the kill tests, the print round trip)
// do not call t.Parallel and run alone before any parallel one starts.
const e2eParallel = 4

// defaultParallel raises -parallel to e2eParallel when the command line
// did not set it (testing reads it in m.Run, after TestMain's flag.Parse)
// and timing bounds are not stretched: on a busy machine or in CI
// (testscale.Factor() > 1) the default stays, so `make test-busy` runs as
// before.
func defaultParallel() {
	if testscale.Factor() > 1 {
		return
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); f != nil && !set {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n < e2eParallel {
			_ = f.Value.Set(strconv.Itoa(e2eParallel))
		}
	}
}

// staleStackAge is how old a compose test project must be before a new run
// removes it: a run killed by its -timeout never reaches its cleanup, and
// its stack's workers would go on reaping sandboxes of the same queue.
const staleStackAge = time.Hour

// removeStaleStacks removes the containers and networks of compose test
// projects (airlocktest*) created more than staleStackAge ago. Younger ones
// may belong to a run in progress beside this one.
func removeStaleStacks() {
	out, err := exec.Command("docker", "ps", "-a", "--filter", "label=com.docker.compose.project",
		"--format", `{{.ID}} {{.Label "com.docker.compose.project"}} {{.CreatedAt}}`).Output()
	if err != nil {
		return
	}
	stale := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, " ", 3)
		if len(f) < 3 || !strings.HasPrefix(f[1], "airlocktest") {
			continue
		}
		created, err := time.Parse("2006-01-02 15:04:05 -0700 MST", f[2])
		if err == nil && time.Since(created) > staleStackAge {
			stale[f[1]] = true
		}
	}
	for project := range stale {
		fmt.Fprintf(os.Stderr, "e2e: removing compose test project %s left by an earlier run\n", project)
		ids, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=com.docker.compose.project="+project).Output()
		if f := strings.Fields(string(ids)); len(f) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-f"}, f...)...).Run()
		}
		nets, _ := exec.Command("docker", "network", "ls", "-q", "--filter", "label=com.docker.compose.project="+project).Output()
		if f := strings.Fields(string(nets)); len(f) > 0 {
			_ = exec.Command("docker", append([]string{"network", "rm"}, f...)...).Run()
		}
	}
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
