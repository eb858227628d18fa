package builder

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/errdefs"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/state"
)

// TestRemoveRetiresWarmContainersFirst: Remove calls Config.Retire (the
// engine dropping the environment's idle warm containers) before it
// removes the images; when a live container still holds the image it is
// 409 naming the environment and that sessions or calls use it (not
// Docker's raw text), and the environment is kept, so a later Remove
// succeeds.
func TestRemoveRetiresWarmContainersFirst(t *testing.T) {
	ctx := context.Background()
	fd := &fakeDocker{t: t, inspect: baseOnly, list: func() []image.Summary { return []image.Summary{{ID: "sha256:geo1"}} }}
	var order []string
	inUse := true
	fd.rmErr = func(id string) error {
		order = append(order, "rm "+id)
		if inUse {
			return errdefs.Conflict(errors.New("conflict: unable to delete sha256:geo1 (cannot be forced) - image is being used by running container 0123abcd"))
		}
		return nil
	}
	cfg := Config{Retire: func(name string) int { order = append(order, "retire "+name); return 1 }}
	st := state.NewMemory(nil)
	m := New(cfg, fd, st, nil, nil)
	reg := environments.NewRegistry(st)
	if _, err := reg.Put(ctx, environments.Record{Name: "geo", Base: "python", Status: environments.StatusReady, Image: "airlock/env-geo:1"}, 0); err != nil {
		t.Fatal(err)
	}
	err := m.Remove(ctx, "geo")
	if !errors.Is(err, core.ErrConflict) || !strings.Contains(err.Error(), "geo") || !strings.Contains(err.Error(), "session") ||
		strings.Contains(err.Error(), "being used by running container") {
		t.Errorf("remove while a session uses it: %v, want 409 naming geo and its sessions", err)
	}
	if len(order) < 2 || order[0] != "retire geo" || order[1] != "rm sha256:geo1" {
		t.Errorf("order %v, want the warm containers retired before the image is removed", order)
	}
	if _, _, err := reg.Get(ctx, "geo"); err != nil {
		t.Errorf("a refused remove deleted the environment: %v", err)
	}
	inUse = false
	if err := m.Remove(ctx, "geo"); err != nil {
		t.Fatalf("remove once unused: %v", err)
	}
	if _, _, err := reg.Get(ctx, "geo"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("after remove: %v", err)
	}
}
