package sandbox

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// stretchController plays a controller that starts the code, says it
// waited stretch for a CPU after wait, and answers ok after run (never,
// when run is negative).
func stretchController(wait, stretch, run time.Duration) func(string, net.Conn) {
	return fakeControllerSending([]string{featureArchive, featureStarted}, func(req ctlRequest, send func(ctlFrame) bool) {
		if req.Op != "exec" {
			send(ctlFrame{ID: req.ID, T: "done"})
			return
		}
		send(ctlFrame{ID: req.ID, T: "started"})
		time.Sleep(wait)
		send(ctlFrame{ID: req.ID, T: "stretch", MS: stretch.Milliseconds()})
		if run >= 0 {
			time.Sleep(run)
			send(ctlFrame{ID: req.ID, T: "done", Status: "ok"})
		}
	})
}

// TestStretchFrames: the controller's "stretch" frame (its code waited
// for a CPU) moves Airlock's answer deadline as far, but never past
// core.TimeoutStretch times the call's timeout, whatever the frame claims.
func TestStretchFrames(t *testing.T) {
	// The answer deadline after the start: 200 ms + 100 ms grace + 2 s.
	limits := core.Limits{Timeout: 200 * time.Millisecond}
	engine := func(t *testing.T, serve func(string, net.Conn)) *Engine {
		cfg := DefaultConfig()
		cfg.InterruptGrace = 100 * time.Millisecond
		return fakeControllerEngine(t, cfg, serve)
	}
	t.Run("answer after a stretch", func(t *testing.T) {
		t.Parallel()
		// Stretched by 350 ms (within the 400 ms bound), answered at 2.5 s:
		// past the 2.3 s deadline, inside the stretched 2.65 s.
		e := engine(t, stretchController(100*time.Millisecond, 350*time.Millisecond, 2400*time.Millisecond))
		res, err := e.Exec(context.Background(), core.Request{Language: core.Python, Code: "pass", Limits: limits})
		if err != nil || res.Status != core.StatusOK {
			t.Fatalf("a call answered inside its stretched deadline: %v %+v", err, res)
		}
		if n, secs := testutil.ToFloat64(e.metrics.stretchCalls.WithLabelValues("oneshot")), testutil.ToFloat64(e.metrics.stretchSeconds.WithLabelValues("oneshot")); n != 1 || secs != 0.35 {
			t.Errorf("stretch metrics: %v calls, %v s; want 1 call, 0.35 s", n, secs)
		}
	})
	t.Run("no stretch past the bound", func(t *testing.T) {
		t.Parallel()
		// A frame claiming an hour moves the deadline by 400 ms only.
		e := engine(t, stretchController(100*time.Millisecond, time.Hour, -1))
		began := time.Now()
		res, err := e.Exec(context.Background(), core.Request{Language: core.Python, Code: "pass", Limits: limits})
		d := time.Since(began)
		if err != nil || res.Status != core.StatusTimeout {
			t.Fatalf("a controller that never answers: %v %+v", err, res)
		}
		if d < 2700*time.Millisecond || d > 2700*time.Millisecond+testscale.D(2*time.Second) {
			t.Fatalf("given up after %s, want the 2.3 s deadline plus the 400 ms bound", d)
		}
		if secs := testutil.ToFloat64(e.metrics.stretchSeconds.WithLabelValues("oneshot")); secs != 0.4 {
			t.Errorf("stretch seconds %v, want the 0.4 s bound", secs)
		}
	})
}
