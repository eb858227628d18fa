package sandbox

import (
	"fmt"
	"strconv"

	"github.com/airlock-dev/airlock/core"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/go-units"
)

// Labels Airlock puts on every container it creates.
const (
	LabelManaged  = "airlock.managed"
	LabelJob      = "airlock.job"
	LabelOwner    = "airlock.owner"
	LabelInstance = "airlock.instance"
	LabelKind     = "airlock.kind" // oneshot, pool, session
)

// SandboxUser is the uid:gid every sandbox process runs as.
const (
	sandboxUID  = "10001"
	SandboxUser = sandboxUID + ":" + sandboxUID
)

// containerSpec is everything needed to create one sandbox container. Its
// main process is always the image's controller (RunnerPath, set as the
// entrypoint, whatever the image's own). It runs as
// pid 1 (no docker-init: Airlock accepts the link only from pid 1), talks
// to Airlock over its link (link.go: a unix socket whose closing is the dead
// man's switch; no stdin, no attach: its stdout and stderr only reach the
// container's log, never read) and a stopped container removes itself
// (AutoRemove). No host folder is ever mounted: only the link's socket and
// an egress door's; a call's input is copied into the container's own
// /workspace tmpfs (input.go).
type containerSpec struct {
	Image   string
	Env     []string
	Limits  core.Limits
	Labels  map[string]string
	Runtime string
	// CgroupParent is the cgroup the container is created under
	// (Config.CgroupParent; "" for the daemon's default).
	CgroupParent string
	// CPUShares is the container's cgroup cpu.shares, its CPU weight
	// against other containers when the cores are busy (0: the daemon's
	// default, 1024; batch-lane calls get Config.BatchCPUShares).
	CPUShares int64
	// Identity is the uid:gid the container runs as (issue 10: one uid per
	// container, or an input folder's owner); zero means SandboxUser.
	Identity identity
	// Door is the host path of the container's egress door (egress.go),
	// bind-mounted read-only at DoorPath; "" for none (no network at all).
	Door string
	// Link is the host path of the container's link socket (link.go),
	// bind-mounted read-only at LinkPath.
	Link string
}

// build turns a spec into the Docker create payloads. Every isolation
// default of the design card is set here, in one place.
func (s containerSpec) build() (*container.Config, *container.HostConfig) {
	l := s.Limits
	cfg := &container.Config{
		Image: s.Image,
		// The controller is the entrypoint, so no ENTRYPOINT of the image
		// (an environment's, say) can wrap it or take pid 1; no arguments.
		Entrypoint:      []string{"python3", RunnerPath},
		Env:             s.Env,
		User:            SandboxUser,
		WorkingDir:      "/work",
		Labels:          s.Labels,
		NetworkDisabled: true,
		Tty:             false,
		StopSignal:      "SIGKILL",
	}
	noInit := false
	pids := l.Pids
	host := &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges:true"},
		Init:           &noInit,
		IpcMode:        "private",
		CgroupnsMode:   "private",
		PidMode:        "",
		UTSMode:        "",
		Privileged:     false,
		Runtime:        s.Runtime,
		AutoRemove:     true,
		LogConfig:      container.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "1m", "max-file": "1"}},
		Tmpfs:          s.tmpfs(sandboxUID, sandboxUID),
		Resources: container.Resources{
			Memory:           l.Memory,
			MemorySwap:       l.Memory, // swap equal to memory: no swap at all
			MemorySwappiness: ptr(int64(0)),
			NanoCPUs:         int64(l.CPUs * 1e9),
			CPUShares:        s.CPUShares,
			CgroupParent:     s.CgroupParent,
			PidsLimit:        &pids,
			OomKillDisable:   ptr(false),
			Devices:          nil,
			Ulimits: []*units.Ulimit{
				{Name: "nofile", Soft: l.NoFile, Hard: l.NoFile},
				{Name: "fsize", Soft: l.FileSize, Hard: l.FileSize},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
	}
	if s.Link != "" {
		// Airlock's link: a unix socket private to this container, listened
		// on until its controller has connected (connect works on a
		// read-only mount).
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeBind, Source: s.Link, Target: LinkPath, ReadOnly: true})
	}
	if s.Door != "" {
		// A unix socket of the egress proxy, private to this container.
		// NetworkMode stays none.
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeBind, Source: s.Door, Target: DoorPath, ReadOnly: true})
	}
	// Issue 10: per-container uid, OomScoreAdj, capped /dev/shm (tenant.go).
	s.isolateTenant(cfg, host)
	return cfg, host
}

// tmpfs returns the container's size-capped tmpfs mounts, owned by
// uid:gid: /tmp, /work and /workspace, where the controller unpacks a
// call's input (read-only, mode 0555, until then; the controller opens it
// for unpacking only). A tmpfs has its own superblock: /proc/self/mountinfo
// shows "/" as its root and "tmpfs" as its source, no host path.
func (s containerSpec) tmpfs(uid, gid string) map[string]string {
	opts := fmt.Sprintf("rw,nosuid,nodev,noexec,size=%d", s.Limits.TmpfsBytes)
	own := ",uid=" + uid + ",gid=" + gid
	return map[string]string{
		"/tmp":        opts + own + ",mode=1777",
		"/work":       opts + own + ",mode=0755",
		WorkspacePath: opts + own + ",mode=0555",
	}
}

func ptr[T any](v T) *T { return &v }

func labels(kind, job, owner, instance string) map[string]string {
	return map[string]string{
		LabelManaged:  "true",
		LabelKind:     kind,
		LabelJob:      job,
		LabelOwner:    owner,
		LabelInstance: instance,
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
