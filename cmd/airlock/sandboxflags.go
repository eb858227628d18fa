package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/docker/go-units"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/sandbox"
)

// sandboxFlags are the flags shared by commands that run a sandbox engine.
type sandboxFlags struct {
	pool       int
	poolMax    int
	singleUse  bool
	ownerIdle  time.Duration
	spread     bool
	batchCPU   int
	warmMemory string
	runtime    string
	cgroup     cgroupParent
	python     string
	shell      string
	reapEvery  time.Duration
	// inputMaxBytes and inputMaxEntries bound an input folder (--mount,
	// a batch item's folder) copied into a sandbox.
	inputMaxBytes   string
	inputMaxEntries int
	// worker and queue, set by the stack of a Redis worker, label the
	// engine's containers with the worker they serve (sandbox.Config.Worker).
	worker, queue string
	// egress configures the network leash (egressflags.go).
	egress egressFlags
	// hibernateAfter, autoSnapMax and autoSnapQuiet are --hibernate-after,
	// --session-autosnapshot-max-bytes and --session-autosnapshot-quiet
	// (hibernate_flags.go); a session hibernates before the sandbox would
	// end it for being idle.
	hibernateAfter time.Duration
	autoSnapMax    int64
	autoSnapQuiet  time.Duration
	// linkDir is --link-dir: where each sandbox's link socket is made
	// (sandbox.Config.LinkDir; "": a private folder under the temp dir).
	linkDir string
	// schedSlice is --sched-slice: the scheduler time slice this process
	// and its sandboxes' controllers ask for (internal/schedslice).
	schedSlice time.Duration
}

// register adds the flags; pool is the default warm-pool size (long-lived
// processes keep one, one-shot commands do not).
func (f *sandboxFlags) register(fs *flag.FlagSet, pool int) {
	fs.IntVar(&f.pool, "pool", envInt("AIRLOCK_POOL_SIZE", pool), "warm containers kept per runner image (0 disables; env AIRLOCK_POOL_SIZE)")
	fs.IntVar(&f.poolMax, "pool-max", envInt("AIRLOCK_POOL_MAX", 0), "most generic warm containers the demand-driven refill keeps per image (0: the default; env AIRLOCK_POOL_MAX)")
	fs.BoolVar(&f.singleUse, "single-use", envBool("AIRLOCK_SINGLE_USE", false), "one container per one-shot call, destroyed after it, instead of per-owner warm containers (env AIRLOCK_SINGLE_USE=1)")
	fs.BoolVar(&f.spread, "owner-spread", envOr("AIRLOCK_OWNER_SPREAD", "1") != "0", "let an owner's back-to-back interactive calls alternate between two warm containers, so each finds a spare kernel ready (one more warm container per such owner; env AIRLOCK_OWNER_SPREAD=0 turns it off)")
	fs.DurationVar(&f.ownerIdle, "owner-idle", 0, "how long an owner's idle warm container is kept before it is destroyed (0: the default, 2m)")
	fs.IntVar(&f.batchCPU, "batch-cpu-shares", envInt("AIRLOCK_BATCH_CPU_SHARES", 2), "cgroup cpu.shares of the containers that run batch-lane calls, against 1024 for interactive ones, so a batch that fills the cores yields them to interactive calls (2 is cgroup v1's minimum; 0 leaves them at 1024; env AIRLOCK_BATCH_CPU_SHARES)")
	fs.StringVar(&f.warmMemory, "warm-memory", os.Getenv("AIRLOCK_WARM_MEMORY"), "memory budget of all warm containers together, e.g. 2g (default 2g; env AIRLOCK_WARM_MEMORY)")
	fs.StringVar(&f.runtime, "runtime", os.Getenv("AIRLOCK_RUNTIME"), "OCI runtime for sandboxes (default runc; runsc for gVisor; env AIRLOCK_RUNTIME)")
	// The flag package checks only values given as flags (Set): engine() refuses a bad AIRLOCK_CGROUP_PARENT.
	f.cgroup = cgroupParent(os.Getenv("AIRLOCK_CGROUP_PARENT"))
	fs.Var(&f.cgroup, "cgroup-parent", "cgroup the sandbox containers run under, so the operator can weight them against the host's other work: an absolute path such as /airlock (cgroupfs driver) or a slice such as airlock.slice (systemd driver); default the daemon's (env AIRLOCK_CGROUP_PARENT)")
	fs.StringVar(&f.python, "python-image", envOr("AIRLOCK_PYTHON_IMAGE", "airlock/python:latest"), "image for run_python")
	fs.StringVar(&f.shell, "shell-image", envOr("AIRLOCK_SHELL_IMAGE", "airlock/shell:latest"), "image for execute_shell")
	f.egress.register(fs)
	fs.StringVar(&f.linkDir, "link-dir", os.Getenv("AIRLOCK_LINK_DIR"), "host folder for each sandbox's link socket, the controller's only line to Airlock (a path the Docker daemon sees: mount it at the same path when Airlock runs in a container; default: a private folder under the temp dir; env AIRLOCK_LINK_DIR)")
	fs.StringVar(&f.inputMaxBytes, "input-max-bytes", os.Getenv("AIRLOCK_INPUT_MAX_BYTES"), "largest input folder (--mount, a batch item's folder) copied into a sandbox, as the tar it packs to, e.g. 512m (default 256m; the call's tmpfs and memory must also hold it; env AIRLOCK_INPUT_MAX_BYTES)")
	fs.IntVar(&f.inputMaxEntries, "input-max-entries", envInt("AIRLOCK_INPUT_MAX_ENTRIES", 0), fmt.Sprintf("most files, folders and links of an input folder copied into a sandbox (0: the default, %d; env AIRLOCK_INPUT_MAX_ENTRIES)", sandbox.DefaultInputMaxEntries))
	fs.DurationVar(&f.schedSlice, "sched-slice", envDuration("AIRLOCK_SCHED_SLICE", schedSliceDefault), "time slice this process and each sandbox's controller ask Linux's fair scheduler for (kernel 6.12+; 100us..100ms): a woken thread preempts other work at once instead of waiting out its slice, which keeps calls fast beside CPU-bound work; the CPU share is unchanged (0: the kernel's default; env AIRLOCK_SCHED_SLICE)")
	fs.DurationVar(&f.reapEvery, "reap-interval", envDuration("AIRLOCK_REAP_INTERVAL", 15*time.Second), "how often leftover sandbox containers are looked for: those of dead processes on this host and, with --redis, of dead workers and unbound sessions (env AIRLOCK_REAP_INTERVAL)")
}

// engine builds a sandbox engine from the flags; its metrics go to reg
// (nil: none).
func (f *sandboxFlags) engine(log *slog.Logger, reg prometheus.Registerer) (*sandbox.Engine, error) {
	cfg := sandbox.DefaultConfig()
	cfg.PoolSize = f.pool
	cfg.SingleUse = f.singleUse
	cfg.BatchCPUShares = int64(f.batchCPU)
	cfg.Metrics = reg
	if f.poolMax > 0 {
		cfg.PoolMax = f.poolMax
	}
	cfg.OwnerSpread = f.spread
	if f.ownerIdle > 0 {
		cfg.OwnerIdle = f.ownerIdle
	}
	if f.warmMemory != "" {
		n, err := units.RAMInBytes(f.warmMemory)
		if err != nil {
			return nil, fmt.Errorf("--warm-memory %q: %w", f.warmMemory, err)
		}
		cfg.WarmMemoryBudget = n
	}
	if f.inputMaxBytes != "" {
		n, err := units.RAMInBytes(f.inputMaxBytes)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--input-max-bytes %q: want a size such as 256m", f.inputMaxBytes)
		}
		cfg.InputMaxBytes = n
	}
	if f.inputMaxEntries < 0 {
		return nil, fmt.Errorf("--input-max-entries %d: must not be negative", f.inputMaxEntries)
	}
	cfg.InputMaxEntries = f.inputMaxEntries
	cfg.Runtime = f.runtime
	if err := sandbox.CheckCgroupParent(string(f.cgroup)); err != nil {
		return nil, fmt.Errorf("--cgroup-parent (AIRLOCK_CGROUP_PARENT): %w", err)
	}
	cfg.CgroupParent = string(f.cgroup)
	if err := f.applySchedSlice(log); err != nil {
		return nil, err
	}
	cfg.SchedSlice = f.schedSlice
	if f.reapEvery > 0 {
		cfg.ReapInterval = f.reapEvery
	}
	cfg.Worker, cfg.Queue = f.worker, f.queue
	if f.hibernateAfter < 0 {
		return nil, fmt.Errorf("--hibernate-after %v: must not be negative (0 turns hibernation off)", f.hibernateAfter)
	}
	if f.autoSnapMax < 0 {
		return nil, fmt.Errorf("--session-autosnapshot-max-bytes %d: must not be negative (0 turns the snapshots after calls off)", f.autoSnapMax)
	}
	if f.autoSnapQuiet < 0 {
		return nil, fmt.Errorf("--session-autosnapshot-quiet %v: must not be negative (0 saves right after each call)", f.autoSnapQuiet)
	}
	if f.hibernateAfter > 0 && cfg.SessionIdle <= f.hibernateAfter {
		cfg.SessionIdle += time.Minute // hibernated first (at most at the idle time), never ended idle
	}
	cfg.Images = map[core.Language]string{core.Python: f.python, core.Shell: f.shell}
	if f.egress.local != "" && f.egress.doorDir == "" {
		// A local command with --egress: doors in a private folder of ours.
		f.egress.doorDir = filepath.Join(os.TempDir(), fmt.Sprintf("airlock-egress-%d", os.Getuid()))
	}
	eg, err := f.egress.sandbox(log, reg)
	if err != nil {
		return nil, err
	}
	cfg.Egress = eg
	if f.linkDir != "" {
		if err := os.MkdirAll(f.linkDir, 0o700); err != nil {
			return nil, fmt.Errorf("--link-dir: %w", err)
		}
		cfg.LinkDir = f.linkDir
	}
	dc, err := sandbox.NewDockerClient()
	if err != nil {
		return nil, err
	}
	return sandbox.New(cfg, dc, log), nil
}

// limitFlags are per-request limits.
type limitFlags struct {
	timeout time.Duration
	memory  string
	cpus    float64
	pids    int64
}

// register adds the limit flags to fs.
func (f *limitFlags) register(fs *flag.FlagSet) {
	d := sandbox.DefaultConfig()
	fs.DurationVar(&f.timeout, "timeout", 0, fmt.Sprintf("wall-clock limit per run (default %s, the server default; at most %s)", d.Defaults.Timeout, d.Max.Timeout))
	fs.StringVar(&f.memory, "memory", "", "memory limit, e.g. 256m (swap equals memory)")
	fs.Float64Var(&f.cpus, "cpus", 0, "CPU quota in cores")
	fs.Int64Var(&f.pids, "pids", 0, "process limit")
}

// limits returns the limits the flags ask for.
func (f *limitFlags) limits() (core.Limits, error) {
	l := core.Limits{Timeout: f.timeout, CPUs: f.cpus, Pids: f.pids}
	if f.memory != "" {
		n, err := units.RAMInBytes(f.memory)
		if err != nil {
			return l, fmt.Errorf("--memory %q: %w", f.memory, err)
		}
		l.Memory = n
	}
	return l, nil
}

// cgroupParent is the --cgroup-parent flag's value, checked as it is set
// (sandbox.CheckCgroupParent), so a bad one is a usage error.
type cgroupParent string

// String returns the value.
func (c *cgroupParent) String() string { return string(*c) }

// Set checks and keeps v.
func (c *cgroupParent) Set(v string) error {
	if err := sandbox.CheckCgroupParent(v); err != nil {
		return err
	}
	*c = cgroupParent(v)
	return nil
}
