package sandbox

import (
	"strconv"

	"github.com/docker/docker/api/types/container"
)

// Host-pressure and shared-memory settings of every sandbox.
const (
	// SandboxOOMScoreAdj makes the host's OOM killer pick a sandbox before
	// the server (and anything else at the default 0) under host memory
	// pressure. The container's own memory limit is enforced by its cgroup
	// regardless.
	SandboxOOMScoreAdj = 500
	// MaxShmBytes caps /dev/shm (a private tmpfs, IpcMode private): 16 MiB,
	// or the request's tmpfs size when that is smaller. Its pages count
	// against the container's memory limit like any tmpfs.
	MaxShmBytes = 16 << 20
	// LabelUID records the range uid a container runs as.
	LabelUID = "airlock.uid"
)

// isolateTenant applies the per-container identity and the host-pressure
// settings to payloads built by containerSpec.build: the container's own
// uid:gid (also the owner of its tmpfs mounts), a positive
// OomScoreAdj and a capped, private /dev/shm.
func (s containerSpec) isolateTenant(cfg *container.Config, host *container.HostConfig) {
	if s.Identity.UID > 0 {
		cfg.User = s.Identity.user()
		host.Tmpfs = s.tmpfs(strconv.Itoa(s.Identity.UID), strconv.Itoa(s.Identity.GID))
	}
	host.OomScoreAdj = SandboxOOMScoreAdj
	host.IpcMode = "private"
	host.ShmSize = shmBytes(s.Limits.TmpfsBytes)
}

// shmBytes is the /dev/shm size for a tmpfs limit.
func shmBytes(tmpfs int64) int64 {
	if tmpfs > 0 && tmpfs < MaxShmBytes {
		return tmpfs
	}
	return MaxShmBytes
}

// assignIdentity picks who a new container runs as: a uid of the engine's
// range that no live container of this engine has (never a host account's:
// an input folder is copied in, not mounted, so its owner does not matter).
// release gives the uid back if the container is never created.
func (e *Engine) assignIdentity(s *containerSpec) (release func(), err error) {
	uid, err := e.uids.take()
	if err != nil {
		return nil, err
	}
	s.Identity = identity{UID: uid, GID: uid}
	if s.Labels != nil {
		s.Labels[LabelUID] = strconv.Itoa(uid)
	}
	return func() { e.uids.release(uid) }, nil
}
