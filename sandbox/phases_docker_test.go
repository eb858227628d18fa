package sandbox

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/airlock-dev/airlock/core"
)

// TestCallPhasesRecorded (issue 33): back-to-back one-shot calls in real
// containers fill airlock_sandbox_call_phase_seconds:
// every phase of a one-shot call (after_clean and after_refill are
// reported with a container's next call).
func TestCallPhasesRecorded(t *testing.T) {
	t.Parallel() // functional: no timing bound
	reg := prometheus.NewRegistry()
	e := pooledEngine(t, func(c *Config) { c.Metrics = reg })
	for i := 0; i < 3; i++ {
		if r := run(t, e, core.Request{Owner: "phases", Language: core.Python, Code: "print(1)"}); r.Status != core.StatusOK || r.Stdout != "1\n" {
			t.Fatalf("one-shot call %d: %s", i, brief(r))
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "airlock_sandbox_call_phase_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var mode, phase string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "mode":
					mode = l.GetValue()
				case "phase":
					phase = l.GetValue()
				}
			}
			got[mode+"/"+phase] = m.GetHistogram().GetSampleCount()
			if s := m.GetHistogram().GetSampleSum(); s < 0 || s > 60 {
				t.Errorf("%s/%s: %v s in all", mode, phase, s)
			}
		}
	}
	for _, p := range []string{PhaseBegin, PhaseRun, PhaseTeardown, PhaseRelay} {
		if got["oneshot/"+p] != 3 {
			t.Errorf("oneshot/%s: %d samples, want 3 (all: %v)", p, got["oneshot/"+p], got)
		}
	}
	for _, p := range []string{PhaseAfterClean, PhaseAfterRefill} {
		if got["oneshot/"+p] < 1 {
			t.Errorf("oneshot/%s: %d samples, want at least the third call's (all: %v)", p, got["oneshot/"+p], got)
		}
	}
}
