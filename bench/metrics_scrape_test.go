package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestScrapePhasesAndCalls: the phase histogram's sums and counts and the
// calls counter by source are read off a /metrics page as the server
// writes it; a server that does not answer gives nothing.
func TestScrapePhasesAndCalls(t *testing.T) {
	page := `# HELP airlock_sandbox_call_phase_seconds Phases.
# TYPE airlock_sandbox_call_phase_seconds histogram
airlock_sandbox_call_phase_seconds_bucket{mode="oneshot",phase="run",le="+Inf"} 4
airlock_sandbox_call_phase_seconds_sum{mode="oneshot",phase="run"} 0.02
airlock_sandbox_call_phase_seconds_count{mode="oneshot",phase="run"} 4
# HELP airlock_sandbox_calls_total Calls.
# TYPE airlock_sandbox_calls_total counter
airlock_sandbox_calls_total{image="a",source="owner"} 3
airlock_sandbox_calls_total{image="b",source="owner"} 2
airlock_sandbox_calls_total{image="a",source="cold"} 1
`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(page)) }))
	defer srv.Close()
	ctx := context.Background()
	if got := scrapePhases(ctx, srv.URL)["oneshot/run"]; got != [2]float64{0.02, 4} {
		t.Errorf("phase oneshot/run: %v, want [0.02 4]", got)
	}
	calls := scrapeCalls(ctx, srv.URL)
	if calls["owner"] != 5 || calls["cold"] != 1 {
		t.Errorf("calls by source: %v, want owner 5 cold 1", calls)
	}
	srv.Close()
	if got := scrapeCalls(ctx, srv.URL); len(got) != 0 {
		t.Errorf("a closed server gave %v", got)
	}
}
