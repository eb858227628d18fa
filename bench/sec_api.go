package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/bench/loadtest"
)

// apiLevels are the concurrent client counts of issue 7.
var apiLevels = []int{1, 8, 32}

// sectionAPI is issue 7's bench: requests/s, p50/p99 and the status mix of
// POST /v1/tool-calls with print(1) at 1, 8 and 32 clients against
// `airlock serve --pool 2 --concurrency 2`, and the server's peak RSS.
func sectionAPI(ctx context.Context, o options, q *quieter, rep *report) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	base := "http://" + addr
	args := []string{o.airlock, "serve", "--insecure-local", "--rate", "-1", "--pool", "2", "--concurrency", "2", "--addr", addr}
	srv, err := startServer(filepath.Join(o.workdir, "serve-api.log"), childEnv(), args...)
	if err != nil {
		return err
	}
	defer srv.stop(30 * time.Second)
	if err := waitHTTP(ctx, srv, base+"/readyz", time.Minute); err != nil {
		return err
	}
	if err := q.wait(ctx); err != nil { // lets the warm pool fill
		return err
	}
	sampler := sampleRSS(srv.pid())
	var results []loadtest.Result
	var colds []string
	for _, c := range apiLevels {
		if err := q.wait(ctx); err != nil {
			return err
		}
		logf("section 4: %d requests from %d clients", o.apiN, c)
		watch, err := watchCreates(ctx, "airlock.pid="+strconv.Itoa(srv.pid()))
		if err != nil {
			return err
		}
		rs, err := loadtest.Run(ctx, loadtest.Options{BaseURL: base, Concurrency: []int{c}, Requests: o.apiN})
		kinds, werr := watch.stop()
		if err != nil {
			return err
		}
		err = werr
		if err != nil {
			colds = append(colds, "?")
		} else {
			colds = append(colds, fmt.Sprintf("%d cold, %d refills", kinds["oneshot"], kinds["pool"]))
		}
		results = append(results, rs...)
	}
	rss := sampler.finish()
	t := &table{title: fmt.Sprintf("4. API — POST /v1/tool-calls print(1), %d requests per level", o.apiN),
		head: []string{"clients", "requests", "req/s", "p50", "p99", "max", "status mix", "other than 200/429", "containers started"}}
	for i, r := range results {
		t.row(strconv.Itoa(r.Concurrency), strconv.Itoa(r.Requests), fmt.Sprintf("%.1f", r.RPS),
			ms(r.P50), ms(r.P99), ms(r.Max), statusMix(r), strconv.Itoa(r.Unexpected()), colds[i])
	}
	t.note("Server: `%s` (in-process queue, embedded worker); per-key concurrency left at the default (%s).",
		strings.Join(append([]string{"airlock"}, args[1:]...), " "), "8 simultaneous requests, 429 beyond")
	t.note("Server RSS: %s before the first level, %s after the last, highest sampled every 20 ms %s, **VmHWM (peak) %s**.",
		mib(rss.before), mib(rss.after), mib(rss.peakSampled), mib(rss.hwm))
	t.note("Containers started: from `docker events` for the server's containers during the level; a cold one is a call the warm pool could not serve (pool of 2, refilled one at a time; each warm container costs about a second of CPU to boot with pandas preloaded, so on 2 cores back-to-back one-shot calls outrun the pool).")
	t.note("Latency percentiles mix 200s and 429s: a 429 answers at once, so with many 429s p50 is the refusal time, not a tool call's.")
	rep.table(t)
	return nil
}

// statusMix renders the status counts like "200×40 429×12".
func statusMix(r loadtest.Result) string {
	codes := make([]int, 0, len(r.Status))
	for c := range r.Status {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d×%d", c, r.Status[c]))
	}
	if r.Errors > 0 {
		parts = append(parts, fmt.Sprintf("transport error×%d", r.Errors))
	}
	return strings.Join(parts, " ")
}
