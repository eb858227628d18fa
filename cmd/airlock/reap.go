package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/airlock-dev/airlock/queue"
)

// runReap implements `airlock reap`: it removes this host's leftover
// containers and, with --redis, those of the queue's dead workers (checked
// twice, deadWorkerConfirm apart, as a serving reaper does).
func runReap(args []string, stdout, stderr io.Writer) int {
	cmd := command{"reap", stderr}
	fs := flag.NewFlagSet("reap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf sandboxFlags
	var redisURL, queueName string
	sf.register(fs, 0)
	registerQueue(fs, &redisURL, &queueName, "also remove the containers of its dead workers, on any host")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	eng, err := sf.engine(logger(stderr, false), nil)
	if err != nil {
		return cmd.fail(1, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute+deadWorkerConfirm)
	defer cancel()
	n, err := eng.Reap(ctx)
	if err != nil {
		return cmd.fail(1, err)
	}
	fmt.Fprintf(stdout, "removed %d leftover containers\n", n)
	if redisURL == "" {
		return 0
	}
	q, err := queue.NewRedis(queue.Config{RedisURL: redisURL, Name: queueName}, queue.Deps{Logger: logger(stderr, false)})
	if err != nil {
		return cmd.failf(1, "queue: %w", err)
	}
	defer q.Close()
	label, err := q.OpenDeploymentLabel(ctx)
	if err != nil {
		return cmd.failf(1, "queue: %w", err)
	}
	alive := func(ctx context.Context, w string) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, reaperCallTimeout)
		defer cancel()
		return q.WorkerAlive(ctx, w)
	}
	// The first pass only notes which workers' liveness keys are missing.
	if _, err := eng.ReapDeadWorkers(ctx, label, alive, deadWorkerConfirm); err != nil {
		return cmd.fail(1, err)
	}
	select {
	case <-time.After(deadWorkerConfirm):
	case <-ctx.Done():
	}
	n, err = eng.ReapDeadWorkers(ctx, label, alive, deadWorkerConfirm)
	if err != nil {
		return cmd.fail(1, err)
	}
	fmt.Fprintf(stdout, "removed %d containers of dead workers of queue %s\n", n, queueName)
	return 0
}
