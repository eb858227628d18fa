package main

import (
	"context"
	"fmt"
	"os"
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
	t.row("Go", runtime.Version())
	t.row("settings", fmt.Sprintf("BENCH_N=%d BENCH_LOOP=%d BENCH_API_N=%d BENCH_QUEUE_N=%d BENCH_QUEUE_MS=%d image=%s",
		o.n, o.loop, o.apiN, o.queueN, o.queueSpan.Milliseconds(), o.pythonImg))
	t.row("quiet threshold", fmt.Sprintf("CPU busy ≤ %.0f%% of all cores for %s before each measured container call", q.threshold*100, q.window))
	return t
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
