package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
)

// quietLog discards the queue's logs.
var quietLog = slog.New(slog.DiscardHandler)

// sectionQueue is issue 5's bench: the queue's own overhead on a no-op job
// (Redis and in-process), no-op throughput through 1 and 4 workers, and the
// print(1) path through Redis next to the direct engine path.
func sectionQueue(ctx context.Context, o options, q *quieter, rep *report) error {
	rs, err := startRedis(ctx, o.workdir)
	if err != nil {
		return err
	}
	defer rs.close()
	logf("section 3: redis-server at %s (pid %d, AOF on)", rs.url, rs.pid())
	if err := q.wait(ctx); err != nil {
		return err
	}
	lat, err := noopLatency(ctx, o, rs.url)
	if err != nil {
		return err
	}
	tp, err := throughput(ctx, o, rs.url)
	if err != nil {
		return err
	}
	viaRedis, direct, paired, err := printViaRedis(ctx, o, q, rs.url)
	if err != nil {
		return err
	}
	costCmds, costUsec, costCPU, err := redisCost(ctx, rs.url)
	if err != nil {
		return err
	}
	rl, ml := lat["redis"], lat["memory"]
	t := &table{title: "3. Queue — Redis Streams vs in-process vs direct",
		head: []string{"measurement", "Redis Streams", "in-process queue", "direct engine.Exec", "Redis vs the other"}}
	t.row(fmt.Sprintf("no-op job, end-to-end − execution, p50 (n=%d each)", len(rl.d)), ms(rl.pct(50)), ms(ml.pct(50)), "—", signedMS(rl.pct(50)-ml.pct(50)))
	t.row("no-op job, end-to-end − execution, p95", ms(rl.pct(95)), ms(ml.pct(95)), "—", signedMS(rl.pct(95)-ml.pct(95)))
	for _, w := range []int{1, 4} {
		r, m := tp[tpKey{"redis", w}], tp[tpKey{"memory", w}]
		t.row(fmt.Sprintf("no-op jobs/s, %d worker(s), %d callers (median of %d runs of %s)", w, tpCallers, len(r), o.queueSpan),
			rateCell(r), rateCell(m), "—", fmt.Sprintf("in-process is %s Redis", times(median(m)/median(r))))
	}
	t.row(fmt.Sprintf("print(1) warm pool, p50 (n=%d each, interleaved)", len(viaRedis.d)), ms(viaRedis.pct(50)), "—", ms(direct.pct(50)), signedMS(viaRedis.pct(50)-direct.pct(50)))
	t.row("print(1) warm pool, p95", ms(viaRedis.pct(95)), "—", ms(direct.pct(95)), signedMS(viaRedis.pct(95)-direct.pct(95)))
	t.note("**Redis hop adds %s p50** to print(1) (target < 2 ms); median of the per-round paired differences %s; the no-op job's queue overhead through Redis is %s p50.",
		signedMS(viaRedis.pct(50)-direct.pct(50)), signedMS(paired), ms(rl.pct(50)))
	t.note("%s", costNote(costCmds, costUsec, costCPU))
	t.note("Failures: no-op Redis %s, in-process %s; print(1) via Redis %s, direct %s. Warm calls that fell back to a cold container: %s.",
		rl.failures(), ml.failures(), viaRedis.failures(), direct.failures(), cmp.Or(viaRedis.note, "not counted"))
	t.note("Redis path = jobs.Client → queue.Redis (caller's own client) → worker (own client) → jobs.NewRunner → the same warm engine; each worker in the throughput runs has its own Redis client, as separate `airlock worker` processes would.")
	rep.table(t)
	return nil
}
