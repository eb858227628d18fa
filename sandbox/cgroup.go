package sandbox

import (
	"os"
	"strconv"
	"strings"
)

// cgroupCPU returns a container's CPU time so far in seconds, read from its
// cgroup on this host (cgroup v1 cpuacct or v2 cpu.stat, cgroupfs or systemd
// driver), or -1 when it cannot be read (Airlock not on the Docker host).
func cgroupCPU(id string) float64 {
	for _, p := range []string{
		"/sys/fs/cgroup/cpuacct/docker/" + id + "/cpuacct.usage",
		"/sys/fs/cgroup/cpu,cpuacct/docker/" + id + "/cpuacct.usage",
		"/sys/fs/cgroup/cpuacct/system.slice/docker-" + id + ".scope/cpuacct.usage",
		"/sys/fs/cgroup/cpu,cpuacct/system.slice/docker-" + id + ".scope/cpuacct.usage",
	} {
		if ns, ok := readInt(p); ok {
			return float64(ns) / 1e9
		}
	}
	for _, p := range []string{
		"/sys/fs/cgroup/system.slice/docker-" + id + ".scope/cpu.stat",
		"/sys/fs/cgroup/docker/" + id + "/cpu.stat",
	} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				if us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
					return float64(us) / 1e6
				}
			}
		}
	}
	return -1
}

// cgroupMemory returns a container's memory use in bytes, or -1.
func cgroupMemory(id string) int64 {
	for _, p := range []string{
		"/sys/fs/cgroup/memory/docker/" + id + "/memory.usage_in_bytes",
		"/sys/fs/cgroup/memory/system.slice/docker-" + id + ".scope/memory.usage_in_bytes",
		"/sys/fs/cgroup/system.slice/docker-" + id + ".scope/memory.current",
		"/sys/fs/cgroup/docker/" + id + "/memory.current",
	} {
		if n, ok := readInt(p); ok {
			return n
		}
	}
	return -1
}

func readInt(p string) (int64, bool) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}
