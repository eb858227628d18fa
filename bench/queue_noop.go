package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/queue"
)

// tpCallers is the number of concurrent callers in the throughput runs.
const tpCallers = 16

// tpKey names a throughput variant.
type tpKey struct {
	backend string
	workers int
}

// execTimes records how long each no-op job's handler ran.
type execTimes struct {
	mu sync.Mutex
	m  map[string]time.Duration
}

// handler is a no-op handler that records its own execution time.
func (e *execTimes) handler() queue.Handler {
	return queue.HandlerFunc(func(ctx context.Context, j queue.Job) (queue.Reply, error) {
		t := time.Now()
		payload := []byte("ok")
		d := time.Since(t)
		if e != nil {
			e.mu.Lock()
			e.m[j.ID] = d
			e.mu.Unlock()
		}
		return queue.Reply{Payload: payload}, nil
	})
}

// take returns and forgets the execution time of a job.
func (e *execTimes) take(id string) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.m[id]
	delete(e.m, id)
	return d
}

// backend opens one queue of a backend; for memory every call shares one.
type backend struct {
	name string
	open func() (queue.Queue, error)
}

// backends returns Redis (a new client per call, like a new process) and
// in-process (one shared instance) under the queue name.
func backends(url, name string) ([]backend, func(), error) {
	mem, err := queue.NewMemory(queue.Config{Name: name}, queue.Deps{Logger: quietLog})
	if err != nil {
		return nil, nil, err
	}
	var mu sync.Mutex
	var opened []queue.Queue
	redisOpen := func() (queue.Queue, error) {
		r, err := queue.NewRedis(queue.Config{RedisURL: url, Name: name}, queue.Deps{Logger: quietLog})
		if err == nil {
			mu.Lock()
			opened = append(opened, r)
			mu.Unlock()
		}
		return r, err
	}
	closeAll := func() {
		for _, r := range opened {
			_ = r.Close()
		}
		_ = mem.Close()
	}
	return []backend{{"redis", redisOpen}, {"memory", func() (queue.Queue, error) { return mem, nil }}}, closeAll, nil
}

// runWorkers starts n workers (concurrency 1 each) on queues from open and
// returns a function that stops them.
func runWorkers(open func() (queue.Queue, error), n int, h queue.Handler) (func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wq, err := open()
		if err != nil {
			cancel()
			wg.Wait()
			return nil, err
		}
		w, err := wq.NewWorker(queue.WorkerConfig{Concurrency: 1, Grace: 5 * time.Second, ReadBlock: 500 * time.Millisecond}, h)
		if err != nil {
			cancel()
			wg.Wait()
			return nil, err
		}
		wg.Go(func() { _ = w.Run(ctx) })
	}
	return func() { cancel(); wg.Wait() }, nil
}

// noopLatency measures end-to-end minus execution time of sequential no-op
// jobs through one worker, alternating Redis and in-process.
func noopLatency(ctx context.Context, o options, url string) (map[string]*series, error) {
	bs, closeAll, err := backends(url, "bench-lat-"+benchInstance)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	rec := &execTimes{m: map[string]time.Duration{}}
	out := map[string]*series{}
	callers := map[string]queue.Queue{}
	for _, b := range bs {
		stop, err := runWorkers(b.open, 1, rec.handler())
		if err != nil {
			return nil, err
		}
		defer stop()
		if callers[b.name], err = b.open(); err != nil {
			return nil, err
		}
		out[b.name] = &series{name: b.name}
	}
	logf("section 3: %d sequential no-op jobs per backend, alternating", o.queueN)
	const warmup = 50
	for i := 0; i < warmup+o.queueN && ctx.Err() == nil; i++ {
		for k := range bs {
			b := bs[(i+k)%len(bs)]
			id := fmt.Sprintf("lat-%s-%d", b.name, i)
			t := time.Now()
			_, err := callers[b.name].Do(ctx, queue.Job{ID: id, Owner: "bench", Payload: []byte("{}"), Deadline: time.Now().Add(time.Minute)})
			e2e := time.Since(t)
			exec := rec.take(id)
			if i < warmup {
				continue
			}
			if err != nil {
				out[b.name].fail(err)
			} else {
				out[b.name].add(e2e - exec)
			}
		}
	}
	return out, ctx.Err()
}
