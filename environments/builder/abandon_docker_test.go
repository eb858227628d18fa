package builder_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/environments/envtest"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// abandonSpec is a build that reaches the network step (apt-update) and
// would take a while.
const abandonSpec = "name: %s\nbase: shell\napt: [tree]\n"

// TestCanceledBuildLeavesNothing cancels a build in its apt-update step:
// Build returns the cancellation, the build container goes away, no image
// is left and the record says the build failed.
func TestCanceledBuildLeavesNothing(t *testing.T) {
	r := newRig(t)
	name := envtest.Name("t-cancel")
	r.removeAtEnd(t, name)
	src, err := environments.Load(writeSpec(t, fmt.Sprintf(abandonSpec, name), nil))
	if err != nil {
		t.Fatal(err)
	}
	before := buildContainers(t, r.dc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec, built, err := r.m.Build(ctx, src, func(ev environments.Event) {
		if ev.Type == environments.EventStep && ev.Step == environments.StepAptUpdate {
			cancel()
		}
	})
	if built || !errors.Is(err, context.Canceled) {
		t.Fatalf("built %v, err %v", built, err)
	}
	if rec.Status != environments.StatusFailed || rec.Usable() {
		t.Errorf("record %+v", rec)
	}
	if n := buildContainers(t, r.dc); n > before {
		t.Errorf("%d build containers left after the cancel", n-before)
	}
	assertNoImages(t, r.dc, name)
}

// TestKilledBuilderLeavesNothing kills -9 a process in the middle of a
// build: its build container sees its stdin close, stops and removes
// itself; no image is left.
func TestKilledBuilderLeavesNothing(t *testing.T) {
	if os.Getenv("AIRLOCK_ENVTEST_CHILD") != "" {
		t.Skip("the child of this test")
	}
	r := newRig(t)
	name := envtest.Name("t-killed")
	r.removeAtEnd(t, name)
	path := writeSpec(t, fmt.Sprintf(abandonSpec, name), nil)
	before := buildContainers(t, r.dc)
	cmd := exec.Command(os.Args[0], "-test.run=^TestBuildChild$", "-test.v")
	cmd.Env = append(os.Environ(), "AIRLOCK_ENVTEST_CHILD="+path, "AIRLOCK_ENVTEST_STATE="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "STEP apt-update") {
			break
		}
	}
	if n := buildContainers(t, r.dc); n != before+1 {
		t.Fatalf("%d build containers during the build, want %d", n, before+1)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(testscale.D(30 * time.Second))
	for buildContainers(t, r.dc) > before {
		if time.Now().After(deadline) {
			t.Fatalf("the build container outlived its killed builder by %s", testscale.D(30*time.Second))
		}
		time.Sleep(200 * time.Millisecond)
	}
	assertNoImages(t, r.dc, name)
}

// TestBuildChild is the builder process TestKilledBuilderLeavesNothing
// kills: it builds the spec it is given and says when each step begins.
func TestBuildChild(t *testing.T) {
	path := os.Getenv("AIRLOCK_ENVTEST_CHILD")
	if path == "" {
		t.Skip("runs only as the child of TestKilledBuilderLeavesNothing")
	}
	dc := envtest.Docker(t)
	st := openStore(t, os.Getenv("AIRLOCK_ENVTEST_STATE"))
	src, err := environments.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = rigOn(dc, st, "").m.Build(context.Background(), src, func(ev environments.Event) {
		if ev.Type == environments.EventStep {
			fmt.Println("STEP " + ev.Step)
		}
	})
	t.Fatalf("the build ended before the kill: %v (%s)", err, core.CodeOf(err))
}
