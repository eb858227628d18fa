package sandbox

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Phases of a call, from the controller's trace (its done frame's "trace":
// ms since it read the request at each mark) and the engine's own clock.
// They answer where a call's time goes (issue 33): airlock_sandbox_call_phase_seconds.
const (
	// PhaseBegin: the request read to the code sent to its kernel (a spare
	// taken, pending forks awaited, pipes made, readings taken).
	PhaseBegin = "begin"
	// PhaseRun: the code sent to the kernel's done (the code itself).
	PhaseRun = "run"
	// PhaseTeardown: the kernel's done to the done frame built: leftover
	// processes killed (the sweep), output read to EOF, artifacts read.
	PhaseTeardown = "teardown"
	// PhaseRelay: the rest of the engine's wall time for the call: the
	// request and the frames over the link socket, decoding.
	PhaseRelay = "relay"
	// PhaseAfterClean and PhaseAfterRefill: what the controller did after a
	// one-shot call's done frame (files emptied; spares forked), reported
	// with the next call; a call sent meanwhile waits for it.
	PhaseAfterClean  = "after_clean"
	PhaseAfterRefill = "after_refill"
)

// tracePhases turns a done frame's trace and the engine's wall time of the
// call into phase durations; nil when the controller sent no trace.
func tracePhases(trace map[string]float64, wall time.Duration) map[string]time.Duration {
	sent, okSent := trace["sent"]
	done, okDone := trace["kernel_done"]
	collected, okColl := trace["collected"]
	if !okSent || !okDone || !okColl {
		return nil
	}
	ms := func(v float64) time.Duration { return time.Duration(max(v, 0) * float64(time.Millisecond)) }
	out := map[string]time.Duration{
		PhaseBegin:    ms(sent),
		PhaseRun:      ms(done - sent),
		PhaseTeardown: ms(collected - done),
		PhaseRelay:    max(wall-ms(collected), 0),
	}
	if v, ok := trace["prev_after_clean"]; ok {
		out[PhaseAfterClean] = ms(v)
	}
	if v, ok := trace["prev_after_refill"]; ok {
		out[PhaseAfterRefill] = ms(v)
	}
	return out
}

// newPhaseHistogram is airlock_sandbox_call_phase_seconds{mode,phase}.
func newPhaseHistogram() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "airlock_sandbox_call_phase_seconds",
		Help:    "Where a controller call's time goes, by mode (oneshot, session) and phase: begin (spare taken, code sent), run (the code), teardown (leftovers killed, output and artifacts read, before the answer), relay (the link socket both ways and decoding), after_clean and after_refill (a one-shot call's cleanup after its answer).",
		Buckets: []float64{0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1},
	}, []string{"mode", "phase"})
}

// callPhases records one call's phases.
func (m *metrics) callPhases(mode string, trace map[string]float64, wall time.Duration) {
	for phase, d := range tracePhases(trace, wall) {
		m.phases.WithLabelValues(mode, phase).Observe(d.Seconds())
	}
}
