package main

import (
	"context"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/jobs"
	"github.com/airlock-dev/airlock/sandbox"
)

// printViaRedis measures print(1) on a warm pool through jobs.Client →
// Redis → worker → jobs.NewRunner, interleaved with engine.Exec on the same
// engine, and returns both series and the median paired difference.
func printViaRedis(ctx context.Context, o options, q *quieter, url string) (*series, *series, time.Duration, error) {
	warm, _, err := startEngine(ctx, o, 2, nil)
	if err != nil {
		return nil, nil, 0, err
	}
	defer closeEngine(warm)
	bs, closeAll, err := backends(url, "bench-print-"+benchInstance)
	if err != nil {
		return nil, nil, 0, err
	}
	defer closeAll()
	stop, err := runWorkers(bs[0].open, 1, jobs.NewRunner(warm))
	if err != nil {
		return nil, nil, 0, err
	}
	defer stop()
	cq, err := bs[0].open()
	if err != nil {
		return nil, nil, 0, err
	}
	client := jobs.NewClient(cq, jobs.ClientConfig{})
	viaRedis := &variant{s: &series{name: "redis"}, run: func(ctx context.Context) error {
		res, err := client.Exec(ctx, python("print(1)"))
		return checkResult(res, err, "1\n")
	}}
	direct := &variant{s: &series{name: "direct"}, run: func(ctx context.Context) error {
		res, err := warm.Exec(ctx, python("print(1)"))
		return checkResult(res, err, "1\n")
	}}
	wait := func(ctx context.Context) error { return q.wait(ctx, warm) }
	for _, v := range []*variant{viaRedis, direct} {
		if err := wait(ctx); err != nil {
			return nil, nil, 0, err
		}
		if err := v.run(ctx); err != nil {
			return nil, nil, 0, fmt.Errorf("warm-up print(1) %s: %w", v.s.name, err)
		}
	}
	logf("section 3: print(1) via Redis vs direct, %d interleaved rounds", o.n)
	watch, err := watchCreates(ctx, sandbox.LabelInstance+"="+benchInstance)
	if err != nil {
		return nil, nil, 0, err
	}
	if err := interleave(ctx, q, o.n, []*variant{viaRedis, direct}, wait); err != nil {
		watch.stop()
		return nil, nil, 0, err
	}
	if kinds, err := watch.stop(); err == nil {
		viaRedis.s.note = fmt.Sprintf("%d (one-shot containers created during the rounds, both variants)", kinds["oneshot"])
	}
	var paired time.Duration
	if a, b := viaRedis.s.d, direct.s.d; len(a) == len(b) && len(a) > 0 {
		diffs := make([]time.Duration, len(a))
		for i := range a {
			diffs[i] = a[i] - b[i]
		}
		paired = percentile(diffs, 50)
	}
	return viaRedis.s, direct.s, paired, nil
}
