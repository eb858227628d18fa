package sandbox

import (
	"context"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// TestMeasure prints latency figures through Engine.Handle (run with
// AIRLOCK_MEASURE=1): a warm one-shot print(1), 200 back-to-back calls of
// one owner (p50 and share served warm by the owner's own container), and
// a session call.
func TestMeasure(t *testing.T) {
	if os.Getenv("AIRLOCK_MEASURE") == "" {
		t.Skip("set AIRLOCK_MEASURE=1")
	}
	e := pooledEngine(t, nil)
	ctx := context.Background()
	call := func(req core.Request) time.Duration {
		start := time.Now()
		r, err := e.Handle(ctx, req)
		if err != nil || r.Status != core.StatusOK || r.Stdout != "1\n" {
			t.Fatalf("call: %v %s", err, brief(r))
		}
		return time.Since(start)
	}
	p50 := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	var spaced []time.Duration
	for i := 0; i < 20; i++ {
		spaced = append(spaced, call(core.Request{Owner: "m", Language: core.Python, Code: "print(1)"}))
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("warm one-shot print(1), spaced 200 ms: p50 %s", p50(spaced))
	before := counter(e, "owner")
	var b2b []time.Duration
	for i := 0; i < 200; i++ {
		b2b = append(b2b, call(core.Request{Owner: "m", Language: core.Python, Code: "print(1)"}))
	}
	t.Logf("200 back-to-back one-shot print(1), one owner: p50 %s, %.0f%% served by the owner's warm container",
		p50(b2b), 100*(counter(e, "owner")-before)/200)
	open, err := e.Handle(ctx, core.Request{Op: core.OpSessionOpen, Owner: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_, _ = e.Handle(ctx, core.Request{Op: core.OpSessionClose, Owner: "m", SessionID: open.SessionID})
	}()
	var sess []time.Duration
	for i := 0; i < 100; i++ {
		sess = append(sess, call(core.Request{Owner: "m", SessionID: open.SessionID, Language: core.Python, Code: "print(1)"}))
	}
	t.Logf("session print(1): p50 %s", p50(sess))
}

// counter reads how many calls came from source.
func counter(e *Engine, source string) float64 {
	return float64(e.WarmStats()[source])
}
