package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/airlock-dev/airlock/queue"
)

// runReap implements `airlock reap`: it removes this host's leftover
// containers and, with --redis, those of the queue's dead workers (checked
// twice, deadWorkerConfirm apart, as a serving reaper does).
func runReap(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf sandboxFlags
	sf.register(fs, 0)
	redisURL := fs.String("redis", os.Getenv("AIRLOCK_REDIS_URL"), "Redis URL of the job queue (env AIRLOCK_REDIS_URL): also remove containers of its dead workers, on any host")
	queueName := fs.String("queue", envOr("AIRLOCK_QUEUE", "airlock"), "queue name (with --redis)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	eng, err := sf.engine(logger(stderr, false), nil)
	if err != nil {
		fmt.Fprintf(stderr, "airlock reap: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute+deadWorkerConfirm)
	defer cancel()
	n, err := eng.Reap(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "airlock reap: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "removed %d leftover containers\n", n)
	if *redisURL == "" {
		return 0
	}
	q, err := queue.NewRedis(queue.Config{RedisURL: *redisURL, Name: *queueName}, queue.Deps{Logger: logger(stderr, false)})
	if err != nil {
		fmt.Fprintf(stderr, "airlock reap: queue: %v\n", err)
		return 1
	}
	defer q.Close()
	alive := func(ctx context.Context, w string) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, reaperCallTimeout)
		defer cancel()
		return q.WorkerAlive(ctx, w)
	}
	// The first pass only notes which workers' liveness keys are missing.
	if _, err := eng.ReapDeadWorkers(ctx, *queueName, alive, deadWorkerConfirm); err != nil {
		fmt.Fprintf(stderr, "airlock reap: %v\n", err)
		return 1
	}
	select {
	case <-time.After(deadWorkerConfirm):
	case <-ctx.Done():
	}
	n, err = eng.ReapDeadWorkers(ctx, *queueName, alive, deadWorkerConfirm)
	if err != nil {
		fmt.Fprintf(stderr, "airlock reap: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "removed %d containers of dead workers of queue %s\n", n, *queueName)
	return 0
}
