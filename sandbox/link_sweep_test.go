package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
)

// TestSweepLinks: Reap removes a link folder under --link-dir only when it
// is older than any live boot could keep it and no container carries its
// id (a process killed while its container booted); a fresh folder (a
// worker sharing the folder is booting one), one whose container still
// exists, and anything not named like a link are left alone.
func TestSweepLinks(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-linkStale - time.Minute)
	mk := func(name string, at time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, linkSocket), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := mk(linkPrefix+newID(), old)
	liveID := newID()
	held := mk(linkPrefix+liveID, old)
	fresh := mk(linkPrefix+newID(), time.Now())
	other := mk("link-not-an-id", old)
	f := &fakeDocker{list: func() ([]container.Summary, error) {
		return []container.Summary{{ID: "c1", Labels: map[string]string{LabelManaged: "true", LabelLink: liveID,
			LabelInstance: "another", "airlock.host": "elsewhere"}}}, nil
	}}
	e := New(Config{LinkDir: dir, Instance: "me"}, f, nil)
	if _, err := e.Reap(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale link folder is still there: %v", err)
	}
	for _, p := range []string{held, fresh, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
}
