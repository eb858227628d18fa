package sandbox

import (
	"testing"
	"time"
)

// TestTracePhases: a done frame's cumulative marks become phase
// durations; the relay is the engine's wall time past the controller's;
// a frame without a trace gives none.
func TestTracePhases(t *testing.T) {
	tr := map[string]float64{"kernel_ready": 0.1, "sent": 0.5, "kernel_done": 1.5, "killed": 2, "collected": 2.5,
		"prev_after_clean": 0.7, "prev_after_refill": 0.2}
	got := tracePhases(tr, 4*time.Millisecond)
	want := map[string]time.Duration{PhaseBegin: 500 * time.Microsecond, PhaseRun: time.Millisecond,
		PhaseTeardown: time.Millisecond, PhaseRelay: 1500 * time.Microsecond,
		PhaseAfterClean: 700 * time.Microsecond, PhaseAfterRefill: 200 * time.Microsecond}
	for k, w := range want {
		if d := got[k] - w; d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("%s: %v, want %v", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("phases %v", got)
	}
	if p := tracePhases(nil, time.Millisecond); p != nil {
		t.Errorf("no trace: %v", p)
	}
}
