package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// TestSweepLinksDocker: on the real daemon, a session's container carries
// its link's id (LabelLink), so Reap keeps a stale-looking link folder of
// that id while the container lives, and removes one whose container is
// gone (a process killed -9 while its container booted).
func TestSweepLinksDocker(t *testing.T) {
	t.Parallel() // functional: one container of its own engine
	dir := t.TempDir()
	e := newTestEngine(t, func(c *Config) { c.LinkDir = dir })
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	info, _, err := e.OpenSession(ctx, core.Request{Owner: "o", Language: core.Python})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.CloseSession("o", info.ID) }()
	ss, err := e.sessions.get("o", info.ID)
	if err != nil {
		t.Fatal(err)
	}
	inspect, err := e.docker.ContainerInspect(ctx, ss.box.id)
	if err != nil {
		t.Fatal(err)
	}
	id := inspect.Config.Labels[LabelLink]
	if !isLinkID(id) {
		t.Fatalf("the container's %s label is %q", LabelLink, id)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("the booted container's link folder is still there: %v", left)
	}
	old := time.Now().Add(-linkStale - time.Minute)
	held, gone := filepath.Join(dir, linkPrefix+id), filepath.Join(dir, linkPrefix+newID())
	for _, p := range []string{held, gone} {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(held); err != nil {
		t.Errorf("the link folder of a live container was removed: %v", err)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("the link folder of no container is still there: %v", err)
	}
}
