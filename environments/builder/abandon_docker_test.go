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
	t.Parallel() // its own rig, store and name; no timing bound
	r := newRig(t)
	name := envtest.Name("t-cancel")
	r.removeAtEnd(t, name)
	src, err := environments.Load(writeSpec(t, fmt.Sprintf(abandonSpec, name), nil))
	if err != nil {
		t.Fatal(err)
	}
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
	made := r.made.created()
	if len(made) == 0 {
		t.Fatal("the build created no container before its apt-update step")
	}
	if left := existing(t, r.dc, made); len(left) > 0 {
		t.Errorf("%d of the build's %d containers left after the cancel: %.12v", len(left), len(made), left)
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
	// The child names the containers it creates (the build container) and
	// each step as it begins; other builds on the daemon are not counted.
	var made []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "CONTAINER "); ok {
			made = append(made, id)
		}
		if strings.Contains(sc.Text(), "STEP apt-update") {
			break
		}
	}
	if left := existing(t, r.dc, made); len(made) != 1 || len(left) != 1 {
		t.Fatalf("during the build the child created containers %.12v, of which %.12v exist; want one build container", made, left)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(testscale.D(30 * time.Second))
	for len(existing(t, r.dc, made)) > 0 {
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
	r := rigOn(dc, st, "")
	r.made.onCreate = func(id string) { fmt.Println("CONTAINER " + id) }
	_, _, err = r.m.Build(context.Background(), src, func(ev environments.Event) {
		if ev.Type == environments.EventStep {
			fmt.Println("STEP " + ev.Step)
		}
	})
	t.Fatalf("the build ended before the kill: %v (%s)", err, core.CodeOf(err))
}
