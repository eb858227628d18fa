package sandbox

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/airlock-dev/airlock/core"
	"github.com/prometheus/client_golang/prometheus"
)

// Config is the server-side policy for every execution.
type Config struct {
	// Images maps a language to its image; defaults to airlock/python:latest
	// and airlock/shell:latest.
	Images map[core.Language]string
	// Defaults apply where a request leaves a limit at zero.
	Defaults core.Limits
	// Max is the ceiling no request can exceed.
	Max core.Limits
	// Runtime is the OCI runtime ("" means the daemon's default, runc;
	// "runsc" for gVisor where installed).
	Runtime string
	// CgroupParent is the cgroup the sandbox containers are created
	// under ("": the daemon's default, /docker with the cgroupfs driver).
	// Their CPU weight against the host's other work is that parent's:
	// under Docker's default every container together weighs as one busy
	// process (cpu.shares 1024), so a two-core host busy with two other
	// processes leaves the sandboxes a third of its CPU. A parent of their
	// own that the operator weights (cgroup v1: cpu.shares of
	// /sys/fs/cgroup/cpu/PARENT; the systemd driver: a slice such as
	// airlock.slice and its CPUWeight) gives them the share chosen.
	CgroupParent string
	// MaxCodeBytes bounds Code (default 100 KiB).
	MaxCodeBytes int
	// MaxFileBytes bounds one uploaded or downloaded file (default 16 MiB).
	MaxFileBytes int
	// MaxArtifacts and MaxArtifactBytes bound what one call returns.
	MaxArtifacts     int
	MaxArtifactBytes int
	// PoolSize is the least number of idle generic (not yet owned) warm
	// containers kept per image; 0 disables warm containers and
	// owner reuse entirely (every call boots and destroys its own).
	PoolSize int
	// PoolMax bounds the generic containers per image when demand raises
	// the target above PoolSize (default max(PoolSize, 4)).
	PoolMax int
	// WarmMemoryBudget bounds the sum of Limits.Memory over every warm
	// container (generic or owned, idle) of the engine (default 2 GiB).
	WarmMemoryBudget int64
	// OwnerIdle is how long an owner's idle container is kept for that
	// owner's next call before it is destroyed (default 2 min).
	OwnerIdle time.Duration
	// OwnerSpread lets an owner's interactive one-shot call sent right
	// after the previous one (its only idle container released under 100
	// ms ago, its next spare kernel not ready yet) take a generic container,
	// so back-to-back calls alternate between two containers of the owner
	// and find a spare ready; it costs one more warm container per owner
	// calling back to back. Off in DefaultConfig; `serve` and `worker` turn
	// it on (--owner-spread).
	OwnerSpread bool
	// BatchCPUShares is the cgroup cpu.shares (CPU weight; the daemon's
	// default is 1024, cgroup v1's minimum 2) of the containers that run
	// batch-lane one-shot calls (core.LaneBatch), so a batch that keeps
	// every core busy yields them to interactive calls at once. 0 or
	// negative leaves batch containers at the daemon's default (they are
	// still kept apart from the owner's interactive ones). Default 2.
	BatchCPUShares int64
	// SingleUse gives every call its own container, destroyed afterwards,
	// even when it came warm from the pool (no reuse within an owner).
	SingleUse bool
	// HardOutputBytes is the output past which the controller stops the
	// program (status output_limit), per stream; below it Airlock keeps
	// the head and tail of each stream (Limits.OutputBytes). Default 8 MiB.
	HardOutputBytes int64
	// Metrics receives the engine's Prometheus series (nil: none).
	Metrics prometheus.Registerer
	// SessionIdle, SessionMaxLife bound a session's life; MaxSessions and
	// MaxSessionsPerOwner bound how many exist.
	SessionIdle         time.Duration
	SessionMaxLife      time.Duration
	MaxSessions         int
	MaxSessionsPerOwner int
	// InterruptGrace is how long a session's interpreter gets to recover
	// from an interrupt (timeout, output flood) before it is destroyed.
	InterruptGrace time.Duration
	// StartGrace is how long a controller may take to start an exec's
	// code (its "started" frame: a spare kernel's fork and set-up, the
	// previous call's kernel leaving) on top of the code's own deadline,
	// which counts from that frame. A controller that starts nothing in
	// that time has its container destroyed and the call, which did not
	// run, answers unavailable.
	StartGrace time.Duration
	// SchedSlice is the time slice each container's controller asks the
	// kernel's fair scheduler for (AIRLOCK_SCHED_SLICE_US; its zygote and
	// kernels inherit it): a latency hint that lets a woken controller
	// preempt other work on a busy machine at once (internal/schedslice).
	// 0 leaves the kernel's default.
	SchedSlice time.Duration
	// ReapInterval is how often leftover containers are looked for (0: only at start).
	ReapInterval time.Duration
	// Instance labels this process's containers so a reaper can tell its own
	// live ones from a crashed process's leftovers.
	Instance string
	// Worker and Queue, when set, label every container with the queue
	// worker it serves (LabelWorker, LabelQueue), so a reaper on any host
	// removes it once that worker's liveness key is gone (ReapDeadWorkers).
	Worker, Queue string
	// InputMaxBytes bounds the tar an input folder (Request.Mount) packs
	// to, and InputMaxEntries its files, folders and links (defaults
	// DefaultInputMaxBytes, DefaultInputMaxEntries). The folder is streamed
	// into the container in chunks (input_stream.go), so neither Airlock
	// nor the controller ever holds it whole; the container's tmpfs_bytes
	// and memory_bytes must still hold its files.
	InputMaxBytes   int64
	InputMaxEntries int
	// UIDRange is where each sandbox container's own uid comes from (issue
	// 10), so per-uid kernel limits are not shared; zero means DefaultUIDRange.
	UIDRange IDRange
	// Egress connects calls with a network policy to the worker's egress
	// proxy (issue 29; zero: such calls are refused).
	Egress EgressConfig
	// LinkDir is the host folder where each container's link socket is
	// made (link.go): a path the Docker daemon sees, as it bind-mounts
	// from it. "" makes a private folder under os.TempDir.
	LinkDir string
}

// DefaultConfig returns conservative defaults.
func DefaultConfig() Config {
	return Config{
		Images: map[core.Language]string{core.Python: "airlock/python:latest", core.Shell: "airlock/shell:latest"},
		Defaults: core.Limits{
			Memory: 256 << 20, CPUs: 1, Pids: 128, Timeout: 10 * time.Second,
			OutputBytes: 64 << 10, TmpfsBytes: 64 << 20, NoFile: 256, FileSize: 64 << 20,
		},
		Max: core.Limits{
			Memory: 2 << 30, CPUs: 2, Pids: 512, Timeout: 5 * time.Minute,
			OutputBytes: 1 << 20, TmpfsBytes: 1 << 30, NoFile: 4096, FileSize: 1 << 30,
		},
		MaxCodeBytes:        100 << 10,
		MaxFileBytes:        16 << 20,
		MaxArtifacts:        10,
		MaxArtifactBytes:    8 << 20,
		PoolSize:            0,
		WarmMemoryBudget:    2 << 30,
		OwnerIdle:           2 * time.Minute,
		BatchCPUShares:      2,
		HardOutputBytes:     8 << 20,
		SessionIdle:         15 * time.Minute,
		SessionMaxLife:      2 * time.Hour,
		MaxSessions:         16,
		MaxSessionsPerOwner: 4,
		InterruptGrace:      3 * time.Second,
		StartGrace:          10 * time.Second,
		ReapInterval:        time.Minute,
		InputMaxBytes:       DefaultInputMaxBytes,
		InputMaxEntries:     DefaultInputMaxEntries,
	}
}

// resolve fills zero fields of l from d and refuses anything over max,
// naming the limit. The result is what the container gets.
func resolve(l, d, max core.Limits) (core.Limits, error) {
	var errs []string
	pick64 := func(name string, v, def, hi int64) int64 {
		if v < 0 {
			errs = append(errs, fmt.Sprintf("%s must not be negative (got %d)", name, v))
			return def
		}
		if v == 0 {
			v = def
		}
		if hi > 0 && v > hi {
			errs = append(errs, fmt.Sprintf("%s %d exceeds the server maximum %d", name, v, hi))
		}
		return v
	}
	out := core.Limits{
		Memory:      pick64("memory_bytes", l.Memory, d.Memory, max.Memory),
		Pids:        pick64("pids", l.Pids, d.Pids, max.Pids),
		Timeout:     time.Duration(pick64("timeout", int64(l.Timeout), int64(d.Timeout), int64(max.Timeout))),
		OutputBytes: int(pick64("output_bytes", int64(l.OutputBytes), int64(d.OutputBytes), int64(max.OutputBytes))),
		TmpfsBytes:  pick64("tmpfs_bytes", l.TmpfsBytes, d.TmpfsBytes, max.TmpfsBytes),
		NoFile:      pick64("nofile", l.NoFile, d.NoFile, max.NoFile),
		FileSize:    pick64("file_size_bytes", l.FileSize, d.FileSize, max.FileSize),
	}
	switch {
	case l.CPUs < 0:
		errs = append(errs, fmt.Sprintf("cpus must not be negative (got %g)", l.CPUs))
		out.CPUs = d.CPUs
	case l.CPUs == 0:
		out.CPUs = d.CPUs
	default:
		out.CPUs = l.CPUs
	}
	if max.CPUs > 0 && out.CPUs > max.CPUs {
		errs = append(errs, fmt.Sprintf("cpus %g exceeds the server maximum %g", out.CPUs, max.CPUs))
	}
	// Below these floors the container cannot start at all (runc refuses
	// the CPU quota, the runner cannot open its files): refuse clearly.
	for _, m := range []struct {
		name     string
		v, floor int64
		unit     string
	}{
		{"memory_bytes", out.Memory, 16 << 20, "16 MiB"},
		{"pids", out.Pids, 8, "8"},
		{"nofile", out.NoFile, 64, "64"},
		{"file_size_bytes", out.FileSize, 1 << 20, "1 MiB"},
		{"tmpfs_bytes", out.TmpfsBytes, 1 << 20, "1 MiB"},
		{"output_bytes", int64(out.OutputBytes), 1 << 10, "1 KiB"},
		{"timeout", int64(out.Timeout), int64(100 * time.Millisecond), "100ms"},
	} {
		if m.v < m.floor {
			errs = append(errs, fmt.Sprintf("%s %d is below the %s minimum", m.name, m.v, m.unit))
		}
	}
	if out.CPUs < 0.01 {
		errs = append(errs, fmt.Sprintf("cpus %g is below the 0.01 minimum", out.CPUs))
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return out, nil
}

// CheckCgroupParent reports what is wrong with p as Config.CgroupParent:
// "" (the daemon's default), an absolute cgroup path such as /airlock (the
// cgroupfs driver) or a systemd slice name such as airlock.slice (the
// systemd driver); no "." or ".." elements, spaces or control characters.
func CheckCgroupParent(p string) error {
	if p == "" {
		return nil
	}
	if strings.IndexFunc(p, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("cgroup parent %q: spaces and control characters are not allowed", p)
	}
	if strings.HasSuffix(p, ".slice") && !strings.Contains(p, "/") {
		return nil
	}
	if !strings.HasPrefix(p, "/") || p == "/" {
		return fmt.Errorf("cgroup parent %q: want an absolute cgroup path such as /airlock (Docker's cgroupfs driver) or a systemd slice such as airlock.slice (the systemd driver)", p)
	}
	for _, el := range strings.Split(strings.Trim(p, "/"), "/") {
		if el == "" || el == "." || el == ".." {
			return fmt.Errorf("cgroup parent %q: empty, \".\" and \"..\" path elements are not allowed", p)
		}
	}
	return nil
}
