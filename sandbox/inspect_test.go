package sandbox

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// TestInspectedHostConfig reads back from the daemon the container a
// session runs in and checks every isolation default on it.
func TestInspectedHostConfig(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	e := newTestEngine(t, nil)
	mnt := t.TempDir()
	if err := os.WriteFile(filepath.Join(mnt, "in.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	info, rej, err := e.OpenSession(ctx, core.Request{Owner: "o", Mount: mnt, Limits: core.Limits{Memory: 96 << 20, CPUs: 0.5, Pids: 40}})
	if err != nil || rej != nil {
		t.Fatalf("open: %v %+v", err, rej)
	}
	ss, _ := e.sessions.get("o", info.ID)
	c, err := e.docker.ContainerInspect(ctx, ss.box.id)
	if err != nil {
		t.Fatal(err)
	}
	h, cfg := c.HostConfig, c.Config
	r := h.Resources
	check := func(ok bool, what string, v any) {
		t.Helper()
		if !ok {
			t.Errorf("%s: %v", what, v)
		}
	}
	check(h.NetworkMode == "none", "network mode", h.NetworkMode)
	check(h.ReadonlyRootfs, "read-only root", h.ReadonlyRootfs)
	check(len(h.CapDrop) == 1 && h.CapDrop[0] == "ALL" && len(h.CapAdd) == 0, "capabilities", h.CapDrop)
	check(strings.Contains(strings.Join(h.SecurityOpt, ","), "no-new-privileges"), "no-new-privileges", h.SecurityOpt)
	check(!strings.Contains(strings.Join(h.SecurityOpt, ","), "seccomp=unconfined") && !strings.Contains(strings.Join(h.SecurityOpt, ","), "apparmor=unconfined"), "seccomp/apparmor not disabled", h.SecurityOpt)
	check(!h.Privileged, "privileged", h.Privileged)
	// The controller is pid 1 (Airlock takes the link only from pid 1), it
	// has no stdin (it talks over its link) and it removes itself.
	check(h.Init != nil && !*h.Init, "no docker-init", h.Init)
	check(h.AutoRemove, "auto-remove", h.AutoRemove)
	check(!cfg.StdinOnce && !cfg.OpenStdin && !cfg.AttachStdin && !cfg.AttachStdout, "no stdin, no attach", cfg.OpenStdin)
	check(strings.Join(cfg.Entrypoint, " ") == "python3 "+RunnerPath, "the controller is the entrypoint", cfg.Entrypoint)
	check(h.IpcMode == "private", "ipc", h.IpcMode)
	check(h.PidMode == "" && h.UTSMode == "" && h.UsernsMode == "" && h.CgroupnsMode != "host", "namespaces", []any{h.PidMode, h.UTSMode})
	check(r.Memory == 96<<20 && r.MemorySwap == 96<<20, "memory = swap", []int64{r.Memory, r.MemorySwap})
	check(r.NanoCPUs == 5e8, "cpus", r.NanoCPUs)
	check(r.PidsLimit != nil && *r.PidsLimit == 40, "pids", r.PidsLimit)
	check(len(r.Devices) == 0 && len(h.Binds) == 0, "devices and binds", h.Binds)
	check(h.LogConfig.Type == "json-file" && h.LogConfig.Config["max-size"] != "", "bounded logs", h.LogConfig)
	check(h.Tmpfs["/tmp"] != "" && strings.Contains(h.Tmpfs["/work"], "size="), "tmpfs", h.Tmpfs)
	uid := strconv.Itoa(ss.box.uidForTest(e))
	check(cfg.User == uid+":"+uid && cfg.Labels[LabelUID] == uid && DefaultUIDRange.contains(ss.box.uidForTest(e)), "own uid from the range", cfg.User)
	check(strings.Contains(h.Tmpfs["/work"], ",uid="+uid+",gid="+uid) && strings.Contains(h.Tmpfs["/tmp"], ",uid="+uid), "tmpfs owned by the container's uid", h.Tmpfs)
	check(h.OomScoreAdj == SandboxOOMScoreAdj && h.OomScoreAdj > 0, "oom score adj", h.OomScoreAdj)
	check(h.ShmSize == MaxShmBytes, "/dev/shm capped", h.ShmSize)
	// The input folder is copied into /workspace, a tmpfs of the container's own.
	check(len(h.Mounts) == 1 && h.Mounts[0].Target == LinkPath && h.Mounts[0].ReadOnly && len(c.Mounts) == 1, "no host path mounted but the link, read-only", c.Mounts)
	if len(h.Mounts) == 1 {
		// Taken once, then removed: nothing else can connect.
		_, err := os.Stat(filepath.Dir(h.Mounts[0].Source))
		check(errors.Is(err, fs.ErrNotExist), "the link's folder removed once the controller connected", err)
	}
	check(strings.Contains(h.Tmpfs[WorkspacePath], ",uid="+uid) && strings.Contains(h.Tmpfs[WorkspacePath], "mode=0555"), "workspace tmpfs", h.Tmpfs)
	ul := map[string]int64{}
	for _, u := range r.Ulimits {
		ul[u.Name] = u.Hard
	}
	check(ul["core"] == 0 && ul["nofile"] > 0 && ul["fsize"] > 0, "ulimits", ul)
	for _, kv := range cfg.Env {
		check(!LooksSecret(strings.SplitN(kv, "=", 2)[0]), "env from the allowlist only", kv)
	}
	check(cfg.Labels[LabelManaged] == "true" && cfg.Labels[LabelOwner] == "o" && cfg.Labels["airlock.expires"] != "", "labels", cfg.Labels)
	start := time.Now()
	if err := e.CloseSession("o", info.ID); err != nil {
		t.Fatal(err)
	}
	e.Settle()
	if _, err := e.docker.ContainerInspect(ctx, ss.box.id); err == nil {
		t.Fatalf("session container still exists %s after close", time.Since(start))
	}
}
