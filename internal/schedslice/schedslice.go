// Package schedslice asks Linux's fair scheduler (EEVDF, kernel 6.12 and
// later) for a short time slice for every thread of this process.
//
// Why (issue 33, "no cliff under load"): a call crosses many process
// wake-ups (the HTTP server, the worker, the engine's link reader, the
// controller, the kernel). With other work on every core, each woken
// thread waits for the running one to use up its slice (1.4 ms by default
// on two cores) before it may run. A shorter requested slice gives the
// woken thread an earlier virtual deadline, so it preempts at once.
//
// It is a latency hint, not a priority: the thread's weight (nice) and so
// its share of the CPU are unchanged, no privilege is needed, and a busy
// thread with a short slice is simply preempted sooner in turn. A kernel
// without custom slices (before 6.12) accepts the request and ignores it.
// Threads created later inherit the slice from the thread that creates
// them (sched_setattr's attributes are copied on clone).
package schedslice

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Bounds the kernel clamps a requested slice to.
const (
	Min = 100 * time.Microsecond
	Max = 100 * time.Millisecond
)

// Apply requests slice d for every thread of the process and returns how
// many threads it set. Each thread keeps its policy and nice value; a
// thread not under a fair policy (real-time, idle) is left alone. d of 0
// asks for the kernel's default slice again.
func Apply(d time.Duration) (int, error) {
	if d != 0 && (d < Min || d > Max) {
		return 0, fmt.Errorf("schedslice: %s is outside %s..%s", d, Min, Max)
	}
	seen := map[int]bool{}
	// A thread made during a pass by a thread not yet set would keep the
	// default: pass again until a pass finds no new thread.
	for pass := 0; pass < 5; pass++ {
		tids, err := threads()
		if err != nil {
			return len(seen), err
		}
		fresh := 0
		for _, tid := range tids {
			if seen[tid] {
				continue
			}
			if err := setThread(tid, d); err != nil {
				if err == unix.ESRCH { // the thread exited meanwhile
					continue
				}
				return len(seen), fmt.Errorf("schedslice: thread %d: %w", tid, err)
			}
			seen[tid] = true
			fresh++
		}
		if fresh == 0 {
			break
		}
	}
	return len(seen), nil
}

// Of returns the slice of thread tid (0: the calling thread) as the kernel
// reports it (sched_getattr's runtime for a fair thread).
func Of(tid int) (time.Duration, error) {
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return 0, fmt.Errorf("schedslice: thread %d: %w", tid, err)
	}
	return time.Duration(a.Runtime), nil
}

// setThread sets tid's slice, keeping its policy and nice value.
func setThread(tid int, d time.Duration) error {
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return err
	}
	if a.Policy != unix.SCHED_NORMAL && a.Policy != unix.SCHED_BATCH {
		return nil
	}
	return unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: a.Policy, Nice: a.Nice, Runtime: uint64(d)}, 0)
}

// threads lists the thread ids of the process.
func threads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("schedslice: list threads: %w", err)
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
