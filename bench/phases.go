package main

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// phaseOrder is the order of airlock_sandbox_call_phase_seconds' phases in
// a call's life (sandbox/phases.go).
var phaseOrder = []string{"begin", "run", "teardown", "relay", "after_clean", "after_refill"}

// phaseSums maps "mode/phase" to the histogram's [sum seconds, count].
type phaseSums map[string][2]float64

// phaseFamily is the phase histogram's name.
const phaseFamily = "airlock_sandbox_call_phase_seconds"

// scrapePhases reads airlock_sandbox_call_phase_seconds' sums and counts
// from /metrics.
func scrapePhases(ctx context.Context, base string) phaseSums {
	return phasesOf(scrapeFamily(ctx, base, phaseFamily))
}

// gatherPhases reads the same from an in-process engine's registry.
func gatherPhases(g prometheus.Gatherer) phaseSums {
	fams, _ := g.Gather()
	for _, f := range fams {
		if f.GetName() == phaseFamily {
			return phasesOf(f)
		}
	}
	return phaseSums{}
}

// phasesOf turns the phase histogram's family into sums and counts.
func phasesOf(f *dto.MetricFamily) phaseSums {
	out := phaseSums{}
	for _, m := range f.GetMetric() {
		mode, phase := label(m, "mode"), label(m, "phase")
		if mode == "" || phase == "" {
			continue
		}
		h := m.GetHistogram()
		out[mode+"/"+phase] = [2]float64{h.GetSampleSum(), float64(h.GetSampleCount())}
	}
	return out
}

// phaseCells renders the mean of each phase of mode between two scrapes
// (ms), in phaseOrder; "—" where no call recorded it.
func phaseCells(before, after phaseSums, mode string) []string {
	cells := make([]string, 0, len(phaseOrder))
	for _, p := range phaseOrder {
		a, b := after[mode+"/"+p], before[mode+"/"+p]
		n := a[1] - b[1]
		if n <= 0 {
			cells = append(cells, "—")
			continue
		}
		cells = append(cells, fmt.Sprintf("%.2f ms", (a[0]-b[0])/n*1000))
	}
	return cells
}

// phaseTable is section 6's breakdown of where one-shot calls' time went,
// one row per measured load.
func phaseTable() *table {
	return &table{title: "6b. Where a one-shot call's time goes — mean per phase (`airlock_sandbox_call_phase_seconds` on /metrics)",
		head: append([]string{"load"}, phaseOrder...)}
}
