package queue

import (
	"github.com/airlock-dev/airlock/internal/redistest"

	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkQueue measures the queue's own overhead with a no-op handler:
//
//	<backend>/latency           one caller, one worker: end-to-end Do time;
//	                            p50-µs and p95-µs are the queue overhead
//	                            (the handler does nothing)
//	<backend>/throughput/wN     16 callers, N single-slot workers: jobs/s
//
// Redis workers each get their own client, as separate processes would.
// Run: go test -run '^$' -bench BenchmarkQueue -benchtime 2000x ./queue/
func BenchmarkQueue(b *testing.B) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	backends := []struct {
		name string
		open func(b *testing.B) func() Queue // returns a factory of handles on one queue
	}{
		{"memory", func(b *testing.B) func() Queue {
			q, err := NewMemory(Config{MaxDepth: -1}, Deps{Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = q.Close() })
			return func() Queue { return q }
		}},
		{"redis", func(b *testing.B) func() Queue {
			srv := redistest.Start(b, true)
			name := fmt.Sprintf("bench%d", queueSeq.Add(1))
			return func() Queue {
				q, err := NewRedis(Config{RedisURL: srv.URL(), Name: name, MaxDepth: -1}, Deps{Logger: quiet})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = q.Close() })
				return q
			}
		}},
	}
	noop := HandlerFunc(func(context.Context, Job) (Reply, error) { return Reply{Payload: []byte("ok")}, nil })
	for _, be := range backends {
		b.Run(be.name+"/latency", func(b *testing.B) {
			handle := be.open(b)
			q := handle()
			startBenchWorkers(b, handle, 1, noop)
			ctx := context.Background()
			if _, err := q.Do(ctx, Job{}); err != nil { // warm up connections
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if _, err := q.Do(ctx, Job{Payload: []byte("{}")}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*50/100].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds()), "p95-µs")
		})
		for _, workers := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/throughput/w%d", be.name, workers), func(b *testing.B) {
				handle := be.open(b)
				q := handle()
				startBenchWorkers(b, handle, workers, noop)
				ctx := context.Background()
				if _, err := q.Do(ctx, Job{}); err != nil {
					b.Fatal(err)
				}
				jobs := make(chan struct{}, b.N)
				for range b.N {
					jobs <- struct{}{}
				}
				close(jobs)
				b.ResetTimer()
				t0 := time.Now()
				var wg sync.WaitGroup
				for range 16 {
					wg.Go(func() {
						for range jobs {
							if _, err := q.Do(ctx, Job{Payload: []byte("{}")}); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "jobs/s")
			})
		}
	}
}

// startBenchWorkers runs n single-slot workers, each on its own queue
// handle, until the benchmark ends.
func startBenchWorkers(b *testing.B, handle func() Queue, n int, h Handler) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range n {
		w, err := handle().NewWorker(WorkerConfig{ID: fmt.Sprintf("bw%d", i), ReadBlock: 200 * time.Millisecond}, h)
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() { _ = w.Run(ctx) })
	}
	b.Cleanup(func() { cancel(); wg.Wait() })
}
