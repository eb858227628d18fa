package sandbox

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/core"
)

// TestSchedSliceReachesTheKernel (issue 33): with Config.SchedSlice the
// controller asks for that scheduler slice first thing, and the process
// running a one-shot call (a kernel forked from the zygote) has inherited
// it; without it, the kernel keeps the default. Skipped on a kernel
// without custom slices (before 6.12: se.slice does not follow the request).
func TestSchedSliceReachesTheKernel(t *testing.T) {
	t.Parallel() // functional: no timing bound
	if !hostHasCustomSlices() {
		t.Skip("this kernel has no custom scheduler slices (before 6.12)")
	}
	code := "print([l.split()[-1] for l in open('/proc/self/sched') if l.startswith('se.slice')][0])"
	slice := func(cfg func(*Config)) string {
		e := pooledEngine(t, cfg)
		r := run(t, e, core.Request{Owner: "slice", Language: core.Python, Code: code})
		if r.Status != core.StatusOK {
			t.Fatalf("call: %s", brief(r))
		}
		return strings.TrimSpace(r.Stdout)
	}
	asked := slice(func(c *Config) { c.SchedSlice = 300 * time.Microsecond })
	def := slice(func(c *Config) { c.SchedSlice = 0 })
	if def == "300000" {
		t.Fatalf("the default slice reads 300000 too: cannot tell")
	}
	if asked != "300000" {
		t.Errorf("kernel's slice %s ns, want 300000 (default %s)", asked, def)
	}
}

// hostHasCustomSlices reports whether a slice asked for on this thread
// reads back (it is put back at once).
func hostHasCustomSlices() bool {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a, err := unix.SchedGetAttr(0, 0)
	if err != nil || a.Policy != unix.SCHED_NORMAL {
		return false
	}
	old := a.Runtime
	if unix.SchedSetAttr(0, &unix.SchedAttr{Policy: a.Policy, Nice: a.Nice, Runtime: 300000}, 0) != nil {
		return false
	}
	b, err := unix.SchedGetAttr(0, 0)
	_ = unix.SchedSetAttr(0, &unix.SchedAttr{Policy: a.Policy, Nice: a.Nice, Runtime: old}, 0)
	return err == nil && b.Runtime == 300000
}
