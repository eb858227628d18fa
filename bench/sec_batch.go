package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/client"
	"github.com/airlock-dev/airlock/wire"
)

// batchKeys are section 8's two owners: the batch's, and another
// interactive user (NAME:KEY lines of a keys file).
var batchKeys = [2]string{"batch:bench8-batch-owner-key-01", "other:bench8-other-owner-key-02"}

// sectionBatch is issue 14's bench: a map batch of small `wc -l` items
// through `POST /v1/batches` of a real `airlock serve`, against the same
// items one by one through `POST /v1/tool-calls` and a sequential
// hardened `docker run --rm` loop (a sample, extrapolated, unless
// -batch-full); interactive warm print(1) latency of the batch's owner and
// of another owner, idle and while the batch runs; and the server's RSS
// and CPU over the batch. Every item's output is checked against the
// generated truth.
func sectionBatch(ctx context.Context, o options, q *quieter, rep *report) error {
	bo := o.batch
	work, err := filepath.Abs(o.workdir)
	if err != nil {
		return err
	}
	root := filepath.Join(work, "batch-items")
	logf("section 8: generating %d input folders under %s", bo.items, root)
	items, err := makeBatchItems(root, bo.items)
	if err != nil {
		return fmt.Errorf("generate inputs: %w", err)
	}
	srv, base, args, err := startBatchServer(ctx, o, work, root)
	if err != nil {
		return err
	}
	defer srv.stop(30 * time.Second)
	var owners [2]*client.Client
	for i, kv := range batchKeys {
		_, key, _ := strings.Cut(kv, ":")
		if owners[i], err = client.New(base, client.WithAPIKey(key)); err != nil {
			return err
		}
	}
	if err := q.wait(ctx); err != nil { // lets the generic pool fill
		return err
	}
	logf("section 8: warming both owners, then %d idle probe cycles", bo.idleCycles)
	for range 3 {
		for _, c := range owners {
			if err := printCall(c)(ctx); err != nil {
				return fmt.Errorf("warm-up print(1): %w", err)
			}
		}
	}
	idle := probeCycles(ctx, owners, bo.idleCycles)
	if err := q.wait(ctx); err != nil {
		return err
	}
	run, err := runMapBatch(ctx, owners, srv, items, bo)
	if err != nil {
		return err
	}
	if err := q.wait(ctx); err != nil {
		return err
	}
	loops := runLoops(ctx, owners[0], items, bo)

	rep.table(batchWallTable(o, args, run, loops, len(items)))
	rep.table(batchProbeTable(idle, run.probe))
	rep.table(batchServerTable(run))
	if run.wrong > 0 || loops.calls.wrong > 0 || loops.docker.wrong > 0 {
		return fmt.Errorf("wrong results: batch %d, tool calls %d, docker run %d (first: %s)",
			run.wrong, loops.calls.wrong, loops.docker.wrong, firstNonEmpty(run.firstWrong, loops.calls.firstWrong, loops.docker.firstWrong))
	}
	return nil
}

// startBatchServer starts `airlock serve` with the two keys, a fresh
// embedded store and the items' root as input folder "items".
func startBatchServer(ctx context.Context, o options, work, root string) (*server, string, []string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", nil, err
	}
	keys := filepath.Join(work, "batch-keys")
	if err := os.WriteFile(keys, []byte(strings.Join(batchKeys[:], "\n")+"\n"), 0o600); err != nil {
		return nil, "", nil, err
	}
	data := filepath.Join(work, "batch-data")
	if err := os.RemoveAll(data); err != nil {
		return nil, "", nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := []string{o.airlock, "serve", "--keys-file", keys, "--rate", "-1", "--addr", addr,
		"--data-dir", data, "--input", "items=" + root}
	srv, err := startServer(filepath.Join(work, "serve-batch.log"), childEnv(), args...)
	if err != nil {
		return nil, "", nil, err
	}
	base := "http://" + addr
	if err := waitHTTP(ctx, srv, base+"/readyz", time.Minute); err != nil {
		srv.stop(30 * time.Second)
		return nil, "", nil, err
	}
	return srv, base, args, nil
}

// batchRun is what the map batch measured.
type batchRun struct {
	id          string
	status      string
	concurrency int
	wall        time.Duration
	lines       int
	right       int
	wrong       int
	firstWrong  string
	itemDur     []time.Duration // duration_ms of each result line
	probe       *probeSeries
	rss         rssSeries
}

// runMapBatch submits the map batch as the first owner, probes both
// owners until it ends, and checks every result line.
func runMapBatch(ctx context.Context, owners [2]*client.Client, srv *server, items []batchItem, bo batchOptions) (*batchRun, error) {
	logf("section 8: map batch of %d items, probing interactive calls while it runs", len(items))
	tc, err := client.ToolCall{Name: "execute_shell", Arguments: map[string]any{"command": wcCommand}}.Request()
	if err != nil {
		return nil, err
	}
	spec := wire.BatchMapSpec{ToolCall: &tc, Each: "item-*", Input: "items", Concurrency: bo.concurrency}
	sampler := sampleEverySecond(srv.pid())
	var stop atomic.Bool
	probed := make(chan *probeSeries, 1)
	start := time.Now()
	b, err := owners[0].CreateMapBatch(ctx, spec)
	if err != nil {
		sampler.finish()
		return nil, fmt.Errorf("POST /v1/batches: %w", err)
	}
	go func() { probed <- probeUntil(ctx, owners, &stop) }()
	limit := max(10*time.Minute, time.Duration(len(items))*5*time.Second)
	lastLog := time.Now()
	for !b.Status.Terminal() {
		if time.Since(start) > limit {
			break
		}
		sleepCtx(ctx, 100*time.Millisecond)
		if ctx.Err() != nil {
			break
		}
		nb, err := owners[0].GetBatch(ctx, b.ID)
		if err != nil {
			continue
		}
		b = nb
		if time.Since(lastLog) > 30*time.Second {
			logf("section 8: batch %s %s: %d completed, %d failed of %d after %s", b.ID, b.Status,
				b.RequestCounts.Completed, b.RequestCounts.Failed, b.RequestCounts.Total, time.Since(start).Round(time.Second))
			lastLog = time.Now()
		}
	}
	run := &batchRun{id: b.ID, status: string(b.Status), concurrency: b.Concurrency, wall: time.Since(start)}
	stop.Store(true)
	run.probe = <-probed
	run.rss = sampler.finish()
	if !b.Status.Terminal() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, _ = owners[0].CancelBatch(cctx, b.ID)
		cancel()
		return nil, fmt.Errorf("batch %s still %s after %s (%d of %d done); cancelled", b.ID, b.Status,
			run.wall.Round(time.Second), b.RequestCounts.Completed+b.RequestCounts.Failed, b.RequestCounts.Total)
	}
	logf("section 8: batch %s %s in %s", b.ID, b.Status, run.wall.Round(time.Millisecond))
	lines, err := owners[0].BatchLines(ctx, b.ID)
	if err != nil {
		return nil, fmt.Errorf("GET /v1/batches/%s/results: %w", b.ID, err)
	}
	run.lines = len(lines)
	byID := make(map[string]batchItem, len(items))
	for _, it := range items {
		byID[it.id] = it
	}
	seen := map[string]bool{}
	wrong := func(err error) {
		run.wrong++
		if run.firstWrong == "" {
			run.firstWrong = err.Error()
		}
	}
	for _, l := range lines {
		run.itemDur = append(run.itemDur, time.Duration(l.DurationMS)*time.Millisecond)
		it, ok := byID[l.CustomID]
		switch {
		case !ok:
			wrong(fmt.Errorf("result for unknown custom_id %q", l.CustomID))
		case seen[l.CustomID]:
			wrong(fmt.Errorf("second result for %s", l.CustomID))
		case l.Status != "ok" || l.ExitCode == nil || *l.ExitCode != 0:
			wrong(fmt.Errorf("%s: status %s exit %v: %s %s", l.CustomID, l.Status, exitText(l.ExitCode), l.Message, clip(l.Stderr)))
		default:
			if err := it.check(l.Stdout); err != nil {
				wrong(err)
			} else {
				run.right++
			}
		}
		seen[l.CustomID] = true
	}
	for _, it := range items {
		if !seen[it.id] {
			wrong(fmt.Errorf("no result line for %s", it.id))
		}
	}
	return run, nil
}

// exitText renders an optional exit code.
func exitText(p *int) string {
	if p == nil {
		return "none"
	}
	return strconv.Itoa(*p)
}

// loopRun is one sequential baseline over the sampled items.
type loopRun struct {
	s          series
	right      int
	wrong      int
	firstWrong string
}

// record times one checked run into l.
func (l *loopRun) record(d time.Duration, err error) {
	l.s.add(d) // a wrong or failed item still took its time
	if err != nil {
		l.wrong++
		if l.firstWrong == "" {
			l.firstWrong = err.Error()
		}
		return
	}
	l.right++
}

// total is the loop's wall time: its runs back to back.
func (l *loopRun) total() time.Duration {
	var t time.Duration
	for _, d := range l.s.d {
		t += d
	}
	return t
}

// loopsRun holds both sequential baselines.
type loopsRun struct {
	calls, docker loopRun
	sample        int
}

// runLoops runs the sampled items one by one through POST /v1/tool-calls
// (input folder "items", cd into the item) and through a hardened
// `docker run --rm` with the item mounted at /workspace, interleaved so
// both see the same machine.
func runLoops(ctx context.Context, c *client.Client, items []batchItem, bo batchOptions) *loopsRun {
	sample := sampleItems(items, bo.loopSize())
	logf("section 8: %d items one by one through /v1/tool-calls and docker run --rm, interleaved", len(sample))
	out := &loopsRun{sample: len(sample)}
	env := childEnv()
	for i, it := range sample {
		if ctx.Err() != nil {
			break
		}
		t := time.Now()
		err := toolCallItem(ctx, c, it)
		out.calls.record(time.Since(t), err)
		t = time.Now()
		err = dockerItem(ctx, env, bo.shellImg, it)
		out.docker.record(time.Since(t), err)
		if (i+1)%100 == 0 {
			logf("section 8: %d of %d loop items", i+1, len(sample))
		}
	}
	return out
}

// toolCallItem runs one item through POST /v1/tool-calls and checks it.
func toolCallItem(ctx context.Context, c *client.Client, it batchItem) error {
	cmd := "cd /workspace/" + it.id + " && wc -l *.txt"
	res, err := c.CallTool(ctx, client.ToolCall{Name: "execute_shell", Arguments: map[string]any{"command": cmd}, Input: "items"})
	if err != nil {
		return fmt.Errorf("%s: %w", it.id, err)
	}
	r := res.Result
	if r.Status != "ok" || r.ExitCode == nil || *r.ExitCode != 0 {
		return fmt.Errorf("%s: status %s exit %s: %s %s", it.id, r.Status, exitText(r.ExitCode), r.Message, clip(r.Stderr))
	}
	return it.check(r.Stdout)
}

// dockerItem runs one item in a hardened `docker run --rm` and checks it.
func dockerItem(ctx context.Context, env []string, image string, it batchItem) error {
	argv := append(hardenedRunArgs(), "-v", it.dir+":/workspace:ro", image, "bash", "-c", wcCommand)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s: docker run: %v: %s", it.id, err, clip(strings.TrimSpace(stderr.String())))
	}
	return it.check(string(stdout))
}

// firstNonEmpty returns the first non-empty string.
func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// seconds formats a long duration.
func seconds(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// batchWallTable is 8's main table: the three ways side by side.
func batchWallTable(o options, args []string, run *batchRun, loops *loopsRun, n int) *table {
	t := &table{title: fmt.Sprintf("8. Batch — %d small items (`wc -l *.txt` over one input folder each), wall time", n),
		head: []string{"way", "items run", "wall time for all", "per item", "items/s", "map batch faster by", "results right"}}
	t.row(fmt.Sprintf("map batch, `POST /v1/batches` (concurrency %d)", run.concurrency), strconv.Itoa(run.lines),
		seconds(run.wall), ms(run.wall/time.Duration(max(n, 1))), fmt.Sprintf("%.1f", float64(n)/run.wall.Seconds()), "—",
		fmt.Sprintf("%d/%d", run.right, n))
	extrap := loops.sample < n
	for _, v := range []struct {
		name string
		l    *loopRun
	}{{"`POST /v1/tool-calls`, one by one", &loops.calls}, {"`docker run --rm` loop, hardened", &loops.docker}} {
		k := len(v.l.s.d)
		if k == 0 {
			t.row(v.name, "0", "—", "—", "—", "—", "—")
			continue
		}
		per := v.l.total() / time.Duration(k)
		all := per * time.Duration(n)
		wall := seconds(all)
		if extrap || k < n {
			wall = fmt.Sprintf("%s (**extrapolated** from %d of %d)", wall, k, n)
		}
		t.row(v.name, strconv.Itoa(k), wall, ms(per), fmt.Sprintf("%.2f", 1/per.Seconds()), ratio(all, run.wall),
			fmt.Sprintf("%d/%d", v.l.right, k))
	}
	t.note("Goal (issue 14): the map batch ≥ 20× faster than the `docker run --rm` loop on 2 cores.")
	t.note("Server: `%s` (in-process queue, embedded worker, embedded store, default batch and worker settings); the batch and the tool calls run as owner `batch`.",
		strings.Join(append([]string{"airlock"}, args[1:]...), " "))
	t.note("Map batch: `{\"each\": \"item-*\", \"input\": \"items\", \"tool_call\": execute_shell %q}`, each item mounted read-only at /workspace; wall time from the POST to the first GET that saw it `%s` (polled every 100 ms); batch %s.",
		wcCommand, run.status, run.id)
	if len(run.itemDur) > 0 {
		t.note("Batch items' own `duration_ms`: p50 %s, p95 %s, max %s.", ms(percentile(run.itemDur, 50)), ms(percentile(run.itemDur, 95)), ms(percentile(run.itemDur, 100)))
	}
	t.note("Tool calls: `execute_shell` `cd /workspace/ITEM && wc -l *.txt` with `\"input\": \"items\"` (the whole root mounted: a tool call names an operator input folder, not a subfolder), sequential, one client.")
	t.note("`docker run --rm`: Airlock's limits as flags (`--network none --read-only --cap-drop ALL --user 10001:10001 --memory/--cpus/--pids-limit/ulimits/tmpfs`) and `-v ITEM:/workspace:ro %s bash -c %q`, interleaved item by item with the tool calls.",
		o.batch.shellImg, wcCommand)
	if extrap {
		t.note("The two sequential loops ran %d items spread evenly over the %d, and their mean time per item is multiplied by %d (each item costs a container start); `-batch-full` (BENCH_BATCH_FULL=1) runs all of them, about 2 × %d container starts.", loops.sample, n, n, n)
	}
	for _, w := range []struct{ name, first string }{{"batch", run.firstWrong}, {"tool calls", loops.calls.firstWrong}, {"docker run", loops.docker.firstWrong}} {
		if w.first != "" {
			t.note("**Wrong or failed (%s):** %s", w.name, w.first)
		}
	}
	return t
}

// batchProbeTable is 8b: interactive print(1) idle and during the batch.
func batchProbeTable(idle, during *probeSeries) *table {
	t := &table{title: "8b. Interactive warm `print(1)` (`POST /v1/tool-calls`) idle and while the batch runs",
		head: []string{"owner", "pace", "idle calls", "idle p50", "idle p95", "during calls", "during p50", "during p95", "during/idle p50"}}
	names := [2]string{"the batch's owner", "another owner"}
	for i := range 2 {
		for _, v := range []struct {
			pace    string
			id, dur *series
		}{{"1 call/s", idle.paced[i], during.paced[i]}, {"back-to-back ×5", idle.b2b[i], during.b2b[i]}} {
			r := "—"
			if a, b := v.id.pct(50), v.dur.pct(50); a > 0 && b > 0 {
				r = times(float64(b) / float64(a))
			}
			t.row(names[i], v.pace, strconv.Itoa(len(v.id.d)), ms(v.id.pct(50)), ms(v.id.pct(95)),
				strconv.Itoa(len(v.dur.d)), ms(v.dur.pct(50)), ms(v.dur.pct(95)), r)
			for _, s := range []*series{v.id, v.dur} {
				if s.failed > 0 {
					t.note("%s, %s: %s failed", names[i], v.pace, s.failures())
				}
			}
		}
	}
	t.note("Goal (issue 14): during/idle p50 ≤ 1.5×.")
	t.note("A probe cycle: 5 rounds in which each owner calls once a second (half a second apart), then 5 back-to-back calls of each owner; %d cycles idle, %d complete cycles (plus a partial one) while the batch ran. The calls come at their pace whatever the machine does.", idle.cycles, during.cycles)
	return t
}

// batchServerTable is 8c: the server's memory and CPU over the batch.
func batchServerTable(run *batchRun) *table {
	r := run.rss
	t := &table{title: "8c. Server over the batch — VmRSS sampled every second",
		head: []string{"VmRSS at submit", "max", "at completion", "completion − submit", "VmHWM", "samples", "server CPU", "server CPU per item"}}
	per := "—"
	if run.lines > 0 {
		per = ms(r.cpu / time.Duration(run.lines))
	}
	t.row(mib(r.start), mib(r.max), mib(r.end), signedMiB(r.end-r.start), mib(r.hwm), strconv.Itoa(r.n),
		seconds(r.cpu), per)
	t.note("Server CPU: user+system of the `airlock serve` process (API, batch runner, dispatcher, worker, engine; not the containers) from /proc/PID/stat, including the interactive probe's calls.")
	return t
}

// signedMiB formats a byte difference with a sign.
func signedMiB(b int64) string {
	if b < 0 {
		return "−" + fmt.Sprintf("%.1f MiB", float64(-b)/(1<<20))
	}
	return "+" + fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}
