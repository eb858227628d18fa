package envuse_test

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/environments/envtest"
	"github.com/airlock-dev/airlock/environments/envtest/envuse"
	"github.com/airlock-dev/airlock/state"
)

// TestBuildUse builds the test environment (a no-op once its image
// exists), so a run of this package warms the image every other test of
// environments in use finds.
func TestBuildUse(t *testing.T) {
	dc := envtest.Docker(t)
	m := envuse.Manager(dc, state.NewMemory(nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	start := time.Now()
	rec, err := envuse.BuildUse(ctx, m, t.TempDir(), envuse.UseName)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s in %s (build seconds %.1f)", rec.Image, time.Since(start), rec.BuildSeconds)
}
