package sandbox

import (
	"context"
	"fmt"
	"github.com/airlock-dev/airlock/internal/testscale"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
)

// integration returns a real Docker client, or skips (fails in CI) when the
// daemon or the images are missing.
func integration(t *testing.T) DockerAPI {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: -short")
	}
	dc, err := NewDockerClient()
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
		defer cancel()
		_, err = dc.Ping(ctx)
		if err == nil {
			for _, img := range testImages() {
				if _, err = dc.ImageInspect(ctx, img); err != nil {
					break
				}
			}
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("integration test needs the Docker daemon and images (make images): %v", err)
		}
		t.Skipf("integration test skipped: Docker daemon or images unavailable (make images): %v", err)
	}
	return dc
}

// testImages returns the images under test: AIRLOCK_PYTHON_IMAGE and
// AIRLOCK_SHELL_IMAGE pin a build (other worktrees may move :latest), else
// the :latest tags.
func testImages() map[core.Language]string {
	imgs := DefaultConfig().Images
	if img := os.Getenv("AIRLOCK_PYTHON_IMAGE"); img != "" {
		imgs[core.Python] = img
	}
	if img := os.Getenv("AIRLOCK_SHELL_IMAGE"); img != "" {
		imgs[core.Shell] = img
	}
	return imgs
}

// newTestEngine builds an engine on the real daemon and checks at cleanup
// that none of its containers is left.
func newTestEngine(t *testing.T, mod func(*Config)) *Engine {
	t.Helper()
	dc := integration(t)
	cfg := DefaultConfig()
	cfg.ReapInterval = 0
	cfg.Instance = "test-" + newID()
	cfg.Images = testImages()
	// A call's default deadline is a bound the test's code must finish
	// within (import pandas took over 10 s on two cores at a load of 25):
	// it scales like every other bound; a test that needs the exact
	// default sets it (mod) or names its own limit.
	cfg.Defaults.Timeout = testscale.D(cfg.Defaults.Timeout)
	if mod != nil {
		mod(&cfg)
	}
	e := New(cfg, dc, nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Errorf("close engine: %v", err)
		}
		list, err := dc.ContainerList(ctx, container.ListOptions{All: true,
			Filters: filters.NewArgs(filters.Arg("label", LabelInstance+"="+cfg.Instance))})
		if err != nil {
			t.Errorf("list containers: %v", err)
		}
		for _, c := range list {
			t.Errorf("container %s (%s) was left behind", short(c.ID), c.Labels[LabelKind])
			_ = dc.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
		}
	})
	return e
}

func run(t *testing.T, e *Engine, req core.Request) core.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	res, err := e.Exec(ctx, req)
	if err != nil {
		t.Fatalf("exec: %v", err)
	}
	return res
}

// brief describes a result without artifact bytes.
func brief(r core.Result) string {
	names := make([]string, len(r.Artifacts))
	for i, a := range r.Artifacts {
		names[i] = a.Name
	}
	return fmt.Sprintf("status=%s exit=%d msg=%q stdout=%q stderr=%q truncated=%v artifacts=%v warnings=%v ended=%v",
		r.Status, r.ExitCode, r.Message, clip(r.Stdout), clip(r.Stderr), r.Truncated, names, r.Warnings, r.SessionEnded)
}

func clip(s string) string {
	if len(s) > 400 {
		return s[:200] + "..." + s[len(s)-200:]
	}
	return s
}

// heapDuring runs f and returns the live heap before it and the highest
// live heap sampled every 10 ms while it ran.
func heapDuring(f func()) (base, peak uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base = ms.HeapAlloc
	var hi atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > hi.Load() {
				hi.Store(ms.HeapAlloc)
			}
		}
	}()
	f()
	close(stop)
	<-done
	return base, hi.Load()
}

// warmPairs runs n rounds of a call (act(i), answering actOut) followed by
// a check (answering checkOut) for one owner, and fails when an answer
// differs (naming what the check looks for) or the calls leave the owner's
// one warm container.
func warmPairs(t *testing.T, e *Engine, n int, act func(i int) core.Request, actOut string, check core.Request, checkOut, what string) {
	t.Helper()
	var container string
	for i := 0; i < n; i++ {
		r := run(t, e, act(i))
		if r.Status != core.StatusOK || r.Stdout != actOut {
			t.Fatalf("run %d: the acting call: %s", i, brief(r))
		}
		next := run(t, e, check)
		if next.Status != core.StatusOK || next.Stdout != checkOut {
			t.Fatalf("run %d: %s: %s", i, what, brief(next))
		}
		if container == "" {
			container = r.Container
		}
		if r.Container != container || next.Container != container {
			t.Fatalf("run %d: calls left the owner's warm container %s (%s, %s)", i, container, r.Container, next.Container)
		}
	}
}
