package sandbox

import (
	"context"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
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

// TestMeasureBatchPriority prints (run with AIRLOCK_MEASURE=1) what
// Config.BatchCPUShares does for interactive calls while three batch-lane
// calls of the same owner spin on the cores (one CPU each, on a host of
// two): the wall time of a fixed CPU-bound loop (timed inside the code)
// and the p50 of a warm print(1), for the batch's owner (A) and another
// owner (B), idle and under the batch, with the shares at 2 and off (0).
func TestMeasureBatchPriority(t *testing.T) {
	if os.Getenv("AIRLOCK_MEASURE") == "" {
		t.Skip("set AIRLOCK_MEASURE=1")
	}
	const work = "import time\nt = time.perf_counter()\nn = 0\nfor i in range(4_000_000):\n    n += i\nprint(time.perf_counter() - t)"
	const spin = "while True:\n    pass"
	for _, shares := range []int64{2, 0} {
		e := pooledEngine(t, func(c *Config) { c.BatchCPUShares = shares })
		ctx := context.Background()
		exec := func(req core.Request) (core.Result, time.Duration) {
			start := time.Now()
			r, err := e.Exec(ctx, req)
			if err != nil || r.Status != core.StatusOK {
				t.Fatalf("call: %v %s", err, brief(r))
			}
			return r, time.Since(start)
		}
		// sample interleaves the owners: loop wall times (timed in the code)
		// and print(1) call times, p50 of 7 each.
		sample := func() (loop, print1 map[string]time.Duration) {
			loops, prints := map[string][]time.Duration{}, map[string][]time.Duration{}
			for i := 0; i < 7; i++ {
				for _, o := range []string{"A", "B"} {
					r, _ := exec(core.Request{Owner: o, Language: core.Python, Code: work})
					s, _ := strconv.ParseFloat(strings.TrimSpace(r.Stdout), 64)
					loops[o] = append(loops[o], time.Duration(s*float64(time.Second)))
					_, d := exec(core.Request{Owner: o, Language: core.Python, Code: "print(1)"})
					prints[o] = append(prints[o], d)
				}
			}
			loop, print1 = map[string]time.Duration{}, map[string]time.Duration{}
			for o := range loops {
				loop[o], print1[o] = p50(loops[o]), p50(prints[o])
			}
			return loop, print1
		}
		for _, o := range []string{"A", "B"} { // warm each owner's interactive container
			waitPool(t, e)
			exec(core.Request{Owner: o, Language: core.Python, Code: "print(1)"})
		}
		var wg sync.WaitGroup
		for i := 0; i < 3; i++ { // three batch containers of A, warm
			wg.Add(1)
			go func() {
				defer wg.Done()
				exec(core.Request{Owner: "A", Lane: core.LaneBatch, Language: core.Python, Code: "print(1)"})
			}()
		}
		wg.Wait()
		soloL, soloP := sample()
		spinCtx, stop := context.WithCancel(ctx)
		for i := 0; i < 3; i++ { // they spin until stop (the call is abandoned)
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = e.Exec(spinCtx, core.Request{Owner: "A", Lane: core.LaneBatch, Language: core.Python,
					Code: spin, Limits: core.Limits{Timeout: 2 * time.Minute}})
			}()
		}
		time.Sleep(time.Second)
		busyL, busyP := sample()
		stop()
		wg.Wait()
		for _, o := range []string{"A", "B"} {
			t.Logf("BatchCPUShares %d, owner %s: loop %s idle, %s under the batch (%.2fx); print(1) %s idle, %s (%.2fx)",
				shares, o, soloL[o], busyL[o], float64(busyL[o])/float64(soloL[o]), soloP[o], busyP[o], float64(busyP[o])/float64(soloP[o]))
		}
	}
}

func p50(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}
