package enginetest

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/sandbox"
)

// Docker starts a sandbox engine on the Docker daemon with no warm pool
// and no reaper, its containers labelled with instance name and a unique
// suffix; AIRLOCK_PYTHON_IMAGE pins the python image. configure, when set,
// adjusts the configuration first. The engine closes when t ends.
func Docker(t testing.TB, name string, configure func(*sandbox.Config)) *sandbox.Engine {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: -short")
	}
	sc := sandbox.DefaultConfig()
	sc.ReapInterval, sc.PoolSize = 0, 0
	sc.Instance = "test-" + name + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if img := os.Getenv("AIRLOCK_PYTHON_IMAGE"); img != "" {
		sc.Images[core.Python] = img
	}
	if configure != nil {
		configure(&sc)
	}
	dc, err := sandbox.NewDockerClient()
	if err == nil {
		_, err = dc.ImageInspect(context.Background(), sc.Images[core.Python])
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("integration test needs the Docker daemon and the python image (make images): %v", err)
		}
		t.Skipf("integration test skipped: Docker daemon or python image unavailable (make images): %v", err)
	}
	e := sandbox.New(sc, dc, nil)
	if err := e.Start(context.Background()); err != nil {
		t.Fatalf("sandbox engine: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = e.Close(ctx)
	})
	return e
}
