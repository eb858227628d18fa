package core

import (
	"fmt"
	"time"
)

// TimeoutStretch is how many times its timeout a call's deadline may be
// moved, at most, by the time its code waited for a CPU (a busy machine,
// or the container's CPU quota used up): waiting is not the code's time.
// The controller moves its deadline and says so; Airlock moves its own
// answer deadline and a queued job's deadline within this bound. The
// python image's airlock_call.py has the same number (STRETCH_MAX).
const TimeoutStretch = 2

// MostWall is the longest a call of timeout t may take once its code
// started: t plus the most its deadline may be moved (TimeoutStretch).
func MostWall(t time.Duration) time.Duration { return t + TimeoutStretch*t }

// Over lists the fields of l above the ceiling c, each as "NAME V is over
// C" with its wire name (memory_bytes, timeout_seconds, ...); a zero field
// of c caps nothing. It is nil when l is within c.
func (l Limits) Over(c Limits) []string {
	var out []string
	over := func(name string, v, max int64) {
		if max > 0 && v > max {
			out = append(out, fmt.Sprintf("%s %d is over %d", name, v, max))
		}
	}
	over("memory_bytes", l.Memory, c.Memory)
	over("pids", l.Pids, c.Pids)
	over("output_bytes", int64(l.OutputBytes), int64(c.OutputBytes))
	over("tmpfs_bytes", l.TmpfsBytes, c.TmpfsBytes)
	over("nofile", l.NoFile, c.NoFile)
	over("file_size_bytes", l.FileSize, c.FileSize)
	if c.Timeout > 0 && l.Timeout > c.Timeout {
		out = append(out, fmt.Sprintf("timeout_seconds %g is over %g", l.Timeout.Seconds(), c.Timeout.Seconds()))
	}
	if c.CPUs > 0 && l.CPUs > c.CPUs {
		out = append(out, fmt.Sprintf("cpus %g is over %g", l.CPUs, c.CPUs))
	}
	return out
}
