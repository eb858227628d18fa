package sandbox

import (
	"slices"
	"testing"

	"github.com/airlock-dev/airlock/core"
)

// TestBackToBackSpareSetupNotCharged: a one-shot call does not wait for
// the fork of the spare that replaces the previous call's kernel (the
// zygote forks it while the call runs), yet that spare's set-up (its
// copy-on-write faults and warm-up, tens of ms of CPU) is not charged to
// the call: back-to-back calls of one owner, in one warm container, that
// sleep 0.2 s (no CPU) and print, each report well under a spare's set-up;
// and each sees a fresh kernel (a variable set by the previous call is gone).
func TestBackToBackSpareSetupNotCharged(t *testing.T) {
	e := pooledEngine(t, nil)
	var cpu []float64
	for i := range 9 {
		// The sleep (no CPU) lets the replacement spare set itself up while the call runs.
		code := "import time\ntime.sleep(0.2)\nprint(globals().get('LEFT', 'fresh'))\nLEFT = 'seen'"
		r := run(t, e, core.Request{Owner: "b2b", Code: code})
		if r.Status != core.StatusOK || r.Stdout != "fresh\n" {
			t.Fatalf("call %d: %s", i, brief(r))
		}
		if i > 0 { // the first one takes the container from the pool
			cpu = append(cpu, r.CPUSeconds)
		}
	}
	slices.Sort(cpu)
	t.Logf("cpu_seconds of back-to-back sleep+print calls: %v", cpu)
	if med := cpu[len(cpu)/2]; med > 0.012 {
		t.Fatalf("median cpu_seconds %.3f of a back-to-back sleep+print call: a spare's set-up was charged to it", med)
	}
	if st := e.WarmStats(); st["cold"] > 1 {
		t.Fatalf("back-to-back calls of one owner booted containers: %v", st)
	}
}
