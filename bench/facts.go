package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/sandbox"
)

// machineFacts describes the machine and the run's settings.
func machineFacts(ctx context.Context, o options, q *quieter) *table {
	t := &table{title: "Machine", head: []string{"fact", "value"}}
	t.row("date", time.Now().Format(time.RFC3339))
	t.row("nproc", fmt.Sprint(runtime.NumCPU()))
	t.row("CPU", cpuModel())
	t.row("memory", memTotal())
	t.row("kernel", kernel())
	t.row("cgroup (host /sys/fs/cgroup)", hostCgroup())
	if dc, err := sandbox.NewDockerClient(); err == nil {
		info, err := dc.Info(ctx)
		if err == nil {
			t.row("docker server", info.ServerVersion)
			t.row("docker cgroup", fmt.Sprintf("v%s, driver %s; default runtime %s", info.CgroupVersion, info.CgroupDriver, info.DefaultRuntime))
		} else {
			t.row("docker server", "unreachable: "+err.Error())
		}
		dc.Close()
	}
	t.row("sandboxes' parent cgroup", sandboxParent(o.cgroup))
	t.row("fork of an 80 MiB process (python3 in "+o.pythonImg+", fork, _exit, wait), p50", forkCost(ctx, o.pythonImg))
	t.row("Go", runtime.Version())
	t.row("settings", fmt.Sprintf("BENCH_N=%d BENCH_LOOP=%d BENCH_API_N=%d BENCH_QUEUE_N=%d BENCH_QUEUE_MS=%d image=%s",
		o.n, o.loop, o.apiN, o.queueN, o.queueSpan.Milliseconds(), o.pythonImg))
	t.row("quiet threshold", fmt.Sprintf("CPU busy ≤ %.0f%% of all cores for %s before each measured container call", q.threshold*100, q.window))
	return t
}

// forkScript times fork, _exit and wait of a python3 holding 80 MiB it
// has written, the work behind each one-shot call's fresh interpreter (a
// fork of the preloaded zygote): its cost varies most between machines
// (page-table work is slow in some VMs).
const forkScript = `import os, time
b = bytearray(80 << 20)
for i in range(0, len(b), 4096): b[i] = 1
ts = []
for _ in range(21):
    t = time.perf_counter(); pid = os.fork()
    if pid == 0: os._exit(0)
    os.waitpid(pid, 0); ts.append(time.perf_counter() - t)
print("%.2f ms" % (sorted(ts)[10] * 1000))`

// forkCost runs forkScript in a container of img (dockerRun: no network).
func forkCost(ctx context.Context, img string) string {
	argv := dockerRun(img, forkScript)
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("not measured: %v %s", err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out))
}

// cpuModel returns the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	raw, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// memTotal returns MemTotal of /proc/meminfo.
func memTotal() string {
	raw, _ := os.ReadFile("/proc/meminfo")
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(v), &kb)
			return fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	return "unknown"
}

// kernel returns the running kernel's release.
func kernel() string {
	raw, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(raw))
}

// hostCgroup tells cgroup v2 (unified) from v1 by the mounted hierarchy.
func hostCgroup() string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return "v2 (unified)"
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err == nil {
		return "v1"
	}
	return "unknown"
}

// sandboxParent names the cgroup the bench's sandboxes run under and, on a
// cgroup v1 host, its CPU weight (cpu.shares): what they weigh against
// the CPU hog of the second pass.
func sandboxParent(parent string) string {
	name, path := parent+" (BENCH_CGROUP_PARENT)", parent
	if parent == "" {
		name, path = "Docker's default", "/docker"
	}
	if b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpu", path, "cpu.shares")); err == nil {
		return name + ", cpu.shares " + strings.TrimSpace(string(b))
	}
	return name
}
