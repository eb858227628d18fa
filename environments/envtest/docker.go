package envtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/docker/docker/client"
)

// Bases returns the base images the tests build from: AIRLOCK_PYTHON_IMAGE
// and AIRLOCK_SHELL_IMAGE pin a build (other worktrees may move :latest),
// else the :latest tags.
func Bases() map[string]string {
	b := map[string]string{"python": "airlock/python:latest", "shell": "airlock/shell:latest"}
	if img := os.Getenv("AIRLOCK_PYTHON_IMAGE"); img != "" {
		b["python"] = img
	}
	if img := os.Getenv("AIRLOCK_SHELL_IMAGE"); img != "" {
		b["shell"] = img
	}
	return b
}

// Docker returns a client of the real daemon, or skips the test (fails it
// under CI=true) when the daemon or the base images are missing, and
// under -short.
func Docker(t testing.TB) *client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: -short")
	}
	dc, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err = dc.Ping(ctx); err == nil {
			for _, img := range Bases() {
				if _, err = dc.ImageInspect(ctx, img); err != nil {
					break
				}
			}
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("integration test needs the Docker daemon and the base images (make images): %v", err)
		}
		t.Skipf("integration test skipped: Docker daemon or base images unavailable (make images): %v", err)
	}
	t.Cleanup(func() { _ = dc.Close() })
	return dc
}

// Name returns a unique environment name with prefix, so parallel test
// runs on one daemon never share an image.
func Name(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}
