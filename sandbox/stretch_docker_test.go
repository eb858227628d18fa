package sandbox

import (
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// TestTimeoutStretchDocker: a call's timeout does not count the time its
// code waited for a CPU. The container gets a quarter of a core, so code
// that needs 0.8 s of CPU takes about 3.2 s of wall clock against its 2 s
// timeout: it finishes ok, with a warning naming the wait. Code that never
// ends still times out, by 1 + core.TimeoutStretch times its timeout, and
// a call that sleeps past its timeout is not stretched.
func TestTimeoutStretchDocker(t *testing.T) {
	t.Parallel() // its own engine; the bounds below are the controller's, not the machine's speed
	e := newTestEngine(t, nil)
	quarter := core.Limits{Timeout: 2 * time.Second, CPUs: 0.25}
	t.Run("starved code finishes", func(t *testing.T) {
		r := run(t, e, core.Request{Owner: "o", Language: core.Python, Limits: quarter, Code: `import time
c = time.process_time()
while time.process_time() - c < 0.8:
    pass
print("done")`})
		t.Logf("0.8 s of CPU at a quarter core: %s in %d ms, warnings %q", r.Status, r.DurationMS, r.Warnings)
		if r.Status != core.StatusOK || r.Stdout != "done\n" {
			t.Fatalf("0.8 s of CPU at a quarter core: %s (duration %d ms)", brief(r), r.DurationMS)
		}
		if r.DurationMS <= 2000 || !hasWarning(r, "timeout extended by") {
			t.Fatalf("ran %d ms, warnings %q: want past its 2 s timeout, with the wait named", r.DurationMS, r.Warnings)
		}
	})
	t.Run("endless code still times out", func(t *testing.T) {
		r := run(t, e, core.Request{Owner: "o", Language: core.Python, Limits: quarter, Code: "while True:\n    pass"})
		t.Logf("an endless loop at a quarter core: %s in %d ms, warnings %q", r.Status, r.DurationMS, r.Warnings)
		if r.Status != core.StatusTimeout || !hasWarning(r, "timeout extended by") {
			t.Fatalf("an endless loop at a quarter core: %s", brief(r))
		}
		most := core.MostWall(quarter.Timeout)
		if d := time.Duration(r.DurationMS) * time.Millisecond; d < 3*time.Second || d > most+testscale.D(time.Second) {
			t.Fatalf("timed out after %s: want its deadline stretched, within %s", d, most)
		}
	})
	t.Run("sleep is not stretched", func(t *testing.T) {
		r := run(t, e, core.Request{Owner: "o", Language: core.Python, Limits: core.Limits{Timeout: time.Second}, Code: "import time\ntime.sleep(30)"})
		if r.Status != core.StatusTimeout {
			t.Fatalf("a sleep past the timeout: %s", brief(r))
		}
		if d := time.Duration(r.DurationMS) * time.Millisecond; d > time.Second+testscale.D(time.Second) {
			t.Fatalf("a sleep timed out after %s, want about its 1 s timeout", d)
		}
	})
}

// hasWarning reports whether one of r's warnings contains s.
func hasWarning(r core.Result, s string) bool {
	for _, w := range r.Warnings {
		if strings.Contains(w, s) {
			return true
		}
	}
	return false
}
