package sandbox

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/docker/docker/api/types/container"
)

// slowStartController plays a controller that takes start to hand an
// exec's code to its kernel (then sends "started", unless start is
// negative: never) and answers ok run later.
func slowStartController(features []string, start, run time.Duration) func(string, net.Conn) {
	return fakeControllerSending(features, func(req ctlRequest, send func(ctlFrame) bool) {
		switch {
		case req.Op != "exec":
			send(ctlFrame{ID: req.ID, T: "done"})
		case start >= 0: // else it never starts the code
			time.Sleep(start)
			send(ctlFrame{ID: req.ID, T: "started"})
			time.Sleep(run)
			send(ctlFrame{ID: req.ID, T: "done", Status: "ok"})
		}
	})
}

// fakeControllerEngine is an engine with cfg whose every container ("c1")
// has serve as its controller; it settles at the test's end.
func fakeControllerEngine(t *testing.T, cfg Config, serve func(string, net.Conn)) *Engine {
	e := newFakeEngine(cfg, &fakeDocker{
		create: func(*container.Config, *container.HostConfig) (container.CreateResponse, error) {
			return container.CreateResponse{ID: "c1"}, nil
		},
		start: func(string) error { return nil },
		serve: serve,
	})
	t.Cleanup(e.Settle)
	return e
}

// TestStartGrace: Airlock's deadline for an exec's answer counts from the
// code's start (the controller's "started" frame), so a slow set-up before
// it (a spare's fork on a loaded machine) does not cost the code its time;
// a controller that never starts the code is given up on after StartGrace,
// and the call, which did not run, answers unavailable instead of timeout.
func TestStartGrace(t *testing.T) {
	// The answer deadline after the start: 200 ms + 100 ms grace + 2 s.
	limits := core.Limits{Timeout: 200 * time.Millisecond}
	engine := func(t *testing.T, serve func(string, net.Conn)) *Engine {
		cfg := DefaultConfig()
		cfg.InterruptGrace, cfg.StartGrace = 100*time.Millisecond, 3*time.Second
		return fakeControllerEngine(t, cfg, serve)
	}
	t.Run("slow set-up", func(t *testing.T) {
		t.Parallel()
		// Started 2.5 s in (past the 2.3 s answer deadline counted from the
		// request), answered 1 s later (inside it counted from the start).
		e := engine(t, slowStartController([]string{featureArchive, featureStarted}, 2500*time.Millisecond, time.Second))
		res, err := e.Exec(context.Background(), core.Request{Language: core.Python, Code: "pass", Limits: limits})
		if err != nil || res.Status != core.StatusOK {
			t.Fatalf("a call whose set-up took 2.5 s: %v %+v", err, res)
		}
	})
	t.Run("never started", func(t *testing.T) {
		t.Parallel()
		e := engine(t, slowStartController([]string{featureArchive, featureStarted}, -1, 0))
		began := time.Now()
		_, err := e.Exec(context.Background(), core.Request{Language: core.Python, Code: "pass", Limits: limits})
		if core.CodeOf(err) != core.ErrUnavailable || !strings.Contains(err.Error(), "did not start the code within 3s") {
			t.Fatalf("a controller that never starts the code: %v, want unavailable", err)
		}
		if d := time.Since(began); d < 5*time.Second {
			t.Fatalf("given up after %s, before StartGrace plus the answer deadline (5.3 s)", d)
		}
	})
	t.Run("no started frame", func(t *testing.T) {
		t.Parallel()
		// A controller without the feature (an older environment image):
		// no answer by the whole deadline is the code's timeout, as before.
		e := engine(t, slowStartController([]string{featureArchive}, -1, 0))
		res, err := e.Exec(context.Background(), core.Request{Language: core.Python, Code: "pass", Limits: limits})
		if err != nil || res.Status != core.StatusTimeout || !strings.Contains(res.Message, "did not answer") {
			t.Fatalf("an older controller that never answers: %v %+v", err, res)
		}
	})
}
