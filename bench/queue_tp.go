package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/queue"
)

// throughput counts no-op jobs/s through 1 and 4 workers for both
// backends, in rounds that rotate the variants.
func throughput(ctx context.Context, o options, url string) (map[tpKey][]float64, error) {
	const rounds = 3
	out := map[tpKey][]float64{}
	keys := []tpKey{{"redis", 1}, {"redis", 4}, {"memory", 1}, {"memory", 4}}
	logf("section 3: throughput, %d rounds × %d variants × %s", rounds, len(keys), o.queueSpan)
	for r := 0; r < rounds; r++ {
		for k := range keys {
			key := keys[(r+k)%len(keys)]
			rate, err := oneThroughput(ctx, url, fmt.Sprintf("bench-tp-%s-%d-%s-%d", benchInstance, r, key.backend, key.workers), key, o.queueSpan)
			if err != nil {
				return nil, fmt.Errorf("throughput %s×%d: %w", key.backend, key.workers, err)
			}
			out[key] = append(out[key], rate)
		}
	}
	return out, nil
}

// oneThroughput runs tpCallers callers against key.workers workers for span
// and returns completed jobs per second.
func oneThroughput(ctx context.Context, url, name string, key tpKey, span time.Duration) (float64, error) {
	bs, closeAll, err := backends(url, name)
	if err != nil {
		return 0, err
	}
	defer closeAll()
	b := bs[slices.IndexFunc(bs, func(b backend) bool { return b.name == key.backend })]
	stop, err := runWorkers(b.open, key.workers, (*execTimes)(nil).handler())
	if err != nil {
		return 0, err
	}
	defer stop()
	caller, err := b.open()
	if err != nil {
		return 0, err
	}
	for i := 0; i < 20; i++ { // warm connections and consumer groups
		if _, err := caller.Do(ctx, queue.Job{Payload: []byte("{}")}); err != nil {
			return 0, err
		}
	}
	var done, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(span)
	for c := 0; c < tpCallers; c++ {
		wg.Go(func() {
			for time.Now().Before(end) && ctx.Err() == nil {
				if _, err := caller.Do(ctx, queue.Job{Owner: "bench", Payload: []byte("{}"), Deadline: time.Now().Add(time.Minute)}); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if n := failed.Load(); n > 0 {
		return 0, fmt.Errorf("%d jobs failed, first: %v", n, firstErr.Load())
	}
	return float64(done.Load()) / elapsed.Seconds(), nil
}

// rateCell renders the median rate and the spread of runs.
func rateCell(rs []float64) string {
	if len(rs) == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f jobs/s (%.0f–%.0f)", median(rs), slices.Min(rs), slices.Max(rs))
}

// median of a few values.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
