package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/core"
)

// TestCheckCgroupParent: the parents Docker's two cgroup drivers take pass;
// anything else is refused with a message naming the value.
func TestCheckCgroupParent(t *testing.T) {
	for _, ok := range []string{"", "/airlock", "/airlock/sandboxes", "airlock.slice"} {
		if err := CheckCgroupParent(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"airlock", "/", "/a/../b", "/a//b", "/a/./b", "/air lock", "a/b.slice", "/a\n"} {
		err := CheckCgroupParent(bad)
		if err == nil || !strings.Contains(err.Error(), "cgroup parent") {
			t.Errorf("%q: want an error naming the cgroup parent, got %v", bad, err)
		}
	}
}

// TestCgroupParentDocker: with Config.CgroupParent a session's container
// runs under that cgroup, where the operator's weight for it applies (on a
// cgroup v1 host its cpu cgroup is PARENT/ID), and its code runs as usual.
func TestCgroupParentDocker(t *testing.T) {
	parent := "/airlock-test-" + newID()
	t.Cleanup(func() { // after the engine's close: the parent is empty again
		dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", parent))
		for _, d := range dirs {
			_ = os.Remove(d)
		}
	})
	e := newTestEngine(t, func(c *Config) { c.CgroupParent = parent })
	ctx := context.Background()
	open, err := e.Handle(ctx, core.Request{Op: core.OpSessionOpen, Owner: "cg"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.SessionExec(ctx, core.Request{Owner: "cg", SessionID: open.SessionID, Language: core.Python, Code: "print(6 * 7)"})
	if err != nil || r.Status != core.StatusOK || strings.TrimSpace(r.Stdout) != "42" {
		t.Fatalf("session call under the cgroup parent: %v %s", err, brief(r))
	}
	info, err := e.Handle(ctx, core.Request{Op: core.OpSessionInfo, Owner: "cg", SessionID: open.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if info.Session == nil || info.Session.Container == "" {
		t.Fatalf("session info names no container: %+v", info)
	}
	ins, err := e.docker.ContainerInspect(ctx, info.Session.Container)
	if err != nil {
		t.Fatal(err)
	}
	if got := ins.HostConfig.CgroupParent; got != parent {
		t.Fatalf("container's cgroup parent %q, want %q", got, parent)
	}
	if _, err := os.Stat("/sys/fs/cgroup/cpu/cpu.shares"); err == nil { // cgroup v1, cgroupfs driver
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/cpu", parent, ins.ID)); err != nil {
			t.Fatalf("the container's cpu cgroup is not under %s: %v", parent, err)
		}
	} else {
		t.Logf("not a cgroup v1 host: the cgroup path is not checked")
	}
	if _, err := e.Handle(ctx, core.Request{Op: core.OpSessionClose, Owner: "cg", SessionID: open.SessionID}); err != nil {
		t.Fatal(err)
	}
}
