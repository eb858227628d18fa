package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/client"
)

// ownerKeys are the API keys (owners) of section 6's server (at least
// 16 characters, as the keys file requires).
var ownerKeys = []string{"bench-owner-a-key-0001", "bench-owner-b-key-0002", "bench-owner-c-key-0003", "bench-owner-d-key-0004"}

// sectionOwners is issue 12's bench, through the HTTP API of a real
// `airlock serve` with four keys: calls at an agent's pace (one a second,
// print(1) alternating with pandas describe, against `docker run --rm`),
// 200 back-to-back calls of one owner, 4 concurrent clients of one owner,
// and 4 owners interleaved at a call a second each. Warm or cold comes from
// the server's airlock_sandbox_calls_total counter.
func sectionOwners(ctx context.Context, o options, q *quieter, rep *report) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	keys := filepath.Join(o.workdir, "owner-keys")
	if err := os.WriteFile(keys, []byte(strings.Join(ownerKeys, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	base := "http://" + addr
	args := []string{o.airlock, "serve", "--keys-file", keys, "--rate", "-1", "--concurrency", "4", "--python-image", o.pythonImg, "--shell-image", o.batch.shellImg, "--addr", addr}
	if o.cgroup != "" {
		args = append(args, "--cgroup-parent", o.cgroup)
	}
	srv, err := startServer(filepath.Join(o.workdir, "serve-owners.log"), childEnv(), args...)
	if err != nil {
		return err
	}
	defer srv.stop(30 * time.Second)
	if err := waitHTTP(ctx, srv, base+"/readyz", time.Minute); err != nil {
		return err
	}
	if err := q.wait(ctx); err != nil { // lets the generic pool fill
		return err
	}
	clients := make([]*client.Client, len(ownerKeys))
	for i, k := range ownerKeys {
		if clients[i], err = client.New(base, client.WithAPIKey(k)); err != nil {
			return err
		}
	}
	call := func(c *client.Client, code, want string) func(context.Context) error {
		return func(ctx context.Context) error {
			res, err := c.CallTool(ctx, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": code}})
			if err != nil {
				return err
			}
			if res.Result.Status != "ok" || (want != "" && res.Result.Stdout != want) {
				return fmt.Errorf("status %s stdout %q stderr %q", res.Result.Status, res.Result.Stdout, res.Result.Stderr)
			}
			return nil
		}
	}
	env := childEnv()
	docker := func(code, want string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, _, err := timedRun(ctx, env, want, dockerRun(o.pythonImg, code)...)
			return err
		}
	}
	metrics := func() map[string]float64 { return scrapeCalls(ctx, base) }
	t := &table{title: "6. Warm at any pace — one-shot calls through the API (`POST /v1/tool-calls`), per-owner warm containers",
		head: []string{"load", "variant", "calls", "p50", "p95", "calls/s", "served warm", "vs `docker run --rm` p50"}}

	// a. One client at an agent's pace, alternating print(1) and pandas.
	paced := o.n
	logf("section 6: %d paced rounds (one call a second, alternating) plus docker run --rm", paced)
	pp := &series{name: "print(1)"}
	pd := &series{name: "pandas describe"}
	dp := &series{name: "docker print(1)"}
	dd := &series{name: "docker pandas"}
	before := metrics()
	for i := 0; i < paced && ctx.Err() == nil; i++ {
		measure(ctx, pp, call(clients[0], "print(1)", "1\n"))
		sleepCtx(ctx, time.Second)
		measure(ctx, pd, call(clients[0], pandasSnippet, ""))
		sleepCtx(ctx, time.Second)
		if i%3 == 0 { // docker run --rm costs a second of CPU: fewer samples, interleaved
			measure(ctx, dp, docker("print(1)", "1\n"))
			measure(ctx, dd, docker(pandasSnippet, ""))
		}
	}
	warm := warmShare(before, metrics())
	t.row("1 client, 1 call/s", "print(1)", strconv.Itoa(len(pp.d)), ms(pp.pct(50)), ms(pp.pct(95)), "1", warm, ratio(dp.pct(50), pp.pct(50)))
	t.row("1 client, 1 call/s", "pandas describe", strconv.Itoa(len(pd.d)), ms(pd.pct(50)), ms(pd.pct(95)), "1", warm, ratio(dd.pct(50), pd.pct(50)))
	rep.figureMS("one-shot print(1) at 1 call/s, p50", pp.pct(50))
	t.row("—", "`docker run --rm` print(1) / pandas", fmt.Sprintf("%d / %d", len(dp.d), len(dd.d)), ms(dp.pct(50))+" / "+ms(dd.pct(50)), ms(dp.pct(95))+" / "+ms(dd.pct(95)), "", "", "")

	// b. One owner, 200 back-to-back.
	if err := q.wait(ctx); err != nil {
		return err
	}
	logf("section 6: 200 back-to-back calls of one owner")
	bb := &series{name: "back-to-back"}
	before = metrics()
	pt := phaseTable()
	phases := func() phaseSums { return scrapePhases(ctx, base) }
	ph0 := phases()
	start := time.Now()
	for i := 0; i < 200 && ctx.Err() == nil; i++ {
		measure(ctx, bb, call(clients[1], "print(1)", "1\n"))
	}
	rate := float64(len(bb.d)) / time.Since(start).Seconds()
	pt.row(append([]string{"1 owner, back-to-back"}, phaseCells(ph0, phases(), "oneshot")...)...)
	rep.figureMS("one owner back-to-back print(1), p50", bb.pct(50))
	t.row("1 owner, 200 back-to-back", "print(1)", strconv.Itoa(len(bb.d)), ms(bb.pct(50)), ms(bb.pct(95)), fmt.Sprintf("%.1f", rate), warmShare(before, metrics()), ratio(dp.pct(50), bb.pct(50)))

	// b2. The same back-to-back through a client that opens a new connection
	// per call (curl, a script without a session): what an outside
	// measurement sees when it does not keep connections alive.
	nc := &series{name: "back-to-back, new connection per call"}
	fresh, err := client.New(base, client.WithAPIKey(ownerKeys[1]), client.WithHTTPClient(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}))
	if err != nil {
		return err
	}
	start = time.Now()
	for i := 0; i < 100 && ctx.Err() == nil; i++ {
		measure(ctx, nc, call(fresh, "print(1)", "1\n"))
	}
	rate = float64(len(nc.d)) / time.Since(start).Seconds()
	rep.figureMS("back-to-back, new connection per call, p50", nc.pct(50))
	t.row("1 owner, 100 back-to-back, new connection each", "print(1)", strconv.Itoa(len(nc.d)), ms(nc.pct(50)), ms(nc.pct(95)), fmt.Sprintf("%.1f", rate), "", ratio(dp.pct(50), nc.pct(50)))

	// c. One owner, 4 concurrent clients, 400 calls.
	if err := q.wait(ctx); err != nil {
		return err
	}
	logf("section 6: 4 concurrent clients of one owner, 400 calls")
	cc := &series{name: "concurrent"}
	var mu sync.Mutex
	before = metrics()
	ph0 = phases()
	start = time.Now()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &series{}
			for i := 0; i < 100 && ctx.Err() == nil; i++ {
				measure(ctx, s, call(clients[2], "print(1)", "1\n"))
			}
			mu.Lock()
			cc.d = append(cc.d, s.d...)
			cc.failed += s.failed
			if cc.firstErr == "" {
				cc.firstErr = s.firstErr
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	rate = float64(len(cc.d)) / time.Since(start).Seconds()
	pt.row(append([]string{"1 owner, 4 concurrent clients"}, phaseCells(ph0, phases(), "oneshot")...)...)
	rep.figure("4 clients of one owner", "calls/s", rate)
	t.row("1 owner, 4 concurrent clients", "print(1)", strconv.Itoa(len(cc.d)), ms(cc.pct(50)), ms(cc.pct(95)), fmt.Sprintf("%.1f", rate), warmShare(before, metrics()), ratio(dp.pct(50), cc.pct(50)))

	// d. 4 owners interleaved, one call a second each.
	if err := q.wait(ctx); err != nil {
		return err
	}
	rounds := o.n
	logf("section 6: 4 owners interleaved at one call a second each, %d rounds", rounds)
	per := make([]*series, len(clients))
	for i := range per {
		per[i] = &series{name: ownerKeys[i]}
	}
	before = metrics()
	ph0 = phases()
	for r := 0; r < rounds && ctx.Err() == nil; r++ {
		tick := time.Now()
		for i, c := range clients {
			measure(ctx, per[i], call(c, "print(1)", "1\n"))
			sleepCtx(ctx, time.Until(tick.Add(time.Duration(i+1)*250*time.Millisecond)))
		}
	}
	warm = warmShare(before, metrics())
	pt.row(append([]string{"4 owners, 1 call/s each"}, phaseCells(ph0, phases(), "oneshot")...)...)
	var worst time.Duration
	for _, s := range per {
		worst = max(worst, s.pct(50))
	}
	rep.figureMS("4 owners at 1 call/s each, worst p50", worst)
	for i, s := range per {
		t.row("4 owners, 1 call/s each", "owner "+string(rune('A'+i))+" print(1)", strconv.Itoa(len(s.d)), ms(s.pct(50)), ms(s.pct(95)), "1", warm, ratio(dp.pct(50), s.pct(50)))
	}
	if err := admissionRows(ctx, o, q, rep, t); err != nil {
		t.note("admission rows failed: %v", err)
	}
	for _, s := range append([]*series{pp, pd, dp, dd, bb, nc, cc}, per...) {
		if s.failed > 0 {
			t.note("%s: %d failed calls (first: %s)", s.name, s.failed, s.firstErr)
		}
	}
	t.note("Server: `%s` (in-process queue, embedded worker, default warm settings); each key is one owner.", strings.Join(append([]string{"airlock"}, args[1:]...), " "))
	t.note("Served warm: the share of one-shot calls whose container was already booted (an owner's own idle container or a generic one), from `airlock_sandbox_calls_total{source}` on /metrics before and after the row.")
	t.note("The paced rows never wait for an idle machine: calls come at the pace given, so the pool's refill competes with them as it would with an agent.")
	rep.table(t)
	pt.note("begin: the request read to the code sent to a spare kernel (pending forks awaited); run: the code; teardown: leftover processes killed, output read to EOF, artifacts read, before the answer; relay: the rest of the engine's wall time (the daemon's attach stream both ways, decoding); after_clean / after_refill: the controller's work after a call's answer (files emptied, a spare forked), which a call sent meanwhile waits for. The HTTP API, dispatcher and queue add the difference to the p50 above.")
	rep.table(pt)
	return nil
}

// measure times one call into s.
func measure(ctx context.Context, s *series, f func(context.Context) error) {
	t := time.Now()
	if err := f(ctx); err != nil {
		s.fail(err)
		return
	}
	s.add(time.Since(t))
}

// sleepCtx sleeps d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// scrapeCalls reads airlock_sandbox_calls_total by source from /metrics.
func scrapeCalls(ctx context.Context, base string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range scrapeFamily(ctx, base, "airlock_sandbox_calls_total").GetMetric() {
		out[label(m, "source")] += m.GetCounter().GetValue()
	}
	return out
}

// warmShare renders the share of calls served by a booted container
// between two scrapes, e.g. "198/200 (99%)".
func warmShare(before, after map[string]float64) string {
	d := func(k string) float64 { return after[k] - before[k] }
	warm := d("owner") + d("generic")
	total := warm + d("cold")
	if total == 0 {
		return "n/a (no counter)"
	}
	return fmt.Sprintf("%.0f/%.0f (%.0f%%)", warm, total, 100*warm/total)
}
