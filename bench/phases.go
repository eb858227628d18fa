package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// phaseOrder is the order of airlock_sandbox_call_phase_seconds' phases in
// a call's life (sandbox/phases.go).
var phaseOrder = []string{"begin", "run", "teardown", "relay", "after_clean", "after_refill"}

// phaseSums maps "mode/phase" to the histogram's [sum seconds, count].
type phaseSums map[string][2]float64

// scrapePhases reads airlock_sandbox_call_phase_seconds' sums and counts
// from /metrics.
func scrapePhases(ctx context.Context, base string) phaseSums {
	out := phaseSums{}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return out
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return out
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var idx int
		switch {
		case strings.HasPrefix(line, "airlock_sandbox_call_phase_seconds_sum{"):
			idx = 0
		case strings.HasPrefix(line, "airlock_sandbox_call_phase_seconds_count{"):
			idx = 1
		default:
			continue
		}
		mode, phase := labelValue(line, "mode"), labelValue(line, "phase")
		v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err != nil || mode == "" || phase == "" {
			continue
		}
		e := out[mode+"/"+phase]
		e[idx] = v
		out[mode+"/"+phase] = e
	}
	return out
}

// labelValue returns a label's value on a metrics line, or "".
func labelValue(line, name string) string {
	i := strings.Index(line, name+`="`)
	if i < 0 {
		return ""
	}
	v := line[i+len(name)+2:]
	if j := strings.IndexByte(v, '"'); j >= 0 {
		return v[:j]
	}
	return ""
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
