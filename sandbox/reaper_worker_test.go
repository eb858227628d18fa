package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/docker/docker/api/types/container"
)

// TestReapDeadWorkers: a container labelled with a dead worker (made by
// another engine instance, as on another host) is removed; one of a live
// worker, and one whose worker's liveness is unknown, are kept.
func TestReapDeadWorkers(t *testing.T) {
	e := newTestEngine(t, nil)
	dc := e.docker
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mk := func(worker string) string {
		r, err := dc.ContainerCreate(ctx, &container.Config{Image: testImages()[core.Shell], Cmd: []string{"sleep", "60"},
			Labels: map[string]string{LabelManaged: "true", LabelInstance: "other-host", LabelWorker: worker, LabelQueue: "q"}}, nil, nil, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = dc.ContainerRemove(context.Background(), r.ID, container.RemoveOptions{Force: true}) })
		return r.ID
	}
	dead, live, unknown := mk("w-dead-"+newID()), mk("w-live-"+newID()), mk("w-unknown-"+newID())
	alive := func(_ context.Context, w string) (bool, error) {
		switch w[:4] {
		case "w-li":
			return true, nil
		case "w-un":
			return false, context.DeadlineExceeded
		}
		return false, nil
	}
	n, err := e.ReapDeadWorkers(ctx, "q", alive, 0)
	if err != nil {
		t.Fatal(err)
	}
	exists := func(id string) bool { _, err := dc.ContainerInspect(ctx, id); return err == nil }
	if exists(dead) || !exists(live) || !exists(unknown) || n < 1 {
		t.Fatalf("removed %d; dead kept=%v live kept=%v unknown kept=%v", n, exists(dead), exists(live), exists(unknown))
	}
}
