package main

import (
	"context"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/redisinfo"
	"github.com/airlock-dev/airlock/queue"
	"github.com/redis/go-redis/v9"
)

// costCalls is how many one-shot calls the Redis cost is averaged over.
const costCalls = 200

// redisCost runs costCalls sequential no-op calls through Redis with one
// worker and returns the Redis commands and command µs per call from the
// INFO commandstats delta (script-internal commands included; a script's
// µs also includes its inner commands', so the µs is an upper bound).
func redisCost(ctx context.Context, url string) (cmds, usec, cpu float64, err error) {
	q, err := queue.NewRedis(queue.Config{RedisURL: url, Name: "bench-cost"}, queue.Deps{Logger: quietLog})
	if err != nil {
		return 0, 0, 0, err
	}
	defer q.Close()
	w, err := q.NewWorker(queue.WorkerConfig{Concurrency: 1, ReadBlock: 10 * time.Second}, (*execTimes)(nil).handler())
	if err != nil {
		return 0, 0, 0, err
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(wctx) }()
	defer func() { stop(); <-done }()
	opt, err := redis.ParseURL(url)
	if err != nil {
		return 0, 0, 0, err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	for range 5 { // warm: scripts loaded, groups made
		if _, err := q.Do(ctx, queue.Job{Payload: []byte("w")}); err != nil {
			return 0, 0, 0, err
		}
	}
	time.Sleep(50 * time.Millisecond)
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		return 0, 0, 0, err
	}
	cpu0, err := redisinfo.CPU(ctx, rdb)
	if err != nil {
		return 0, 0, 0, err
	}
	for range costCalls {
		if _, err := q.Do(ctx, queue.Job{Payload: []byte("x")}); err != nil {
			return 0, 0, 0, err
		}
	}
	cpu1, err := redisinfo.CPU(ctx, rdb)
	if err != nil {
		return 0, 0, 0, err
	}
	st, err := redisinfo.CommandStats(ctx, rdb)
	if err != nil {
		return 0, 0, 0, err
	}
	calls, us := st.Calls, st.Usec
	return float64(calls) / costCalls, float64(us) / costCalls, (cpu1 - cpu0) / costCalls, nil
}

// costNote formats the Redis cost for the queue table.
func costNote(cmds, usec, cpu float64) string {
	return fmt.Sprintf("**Redis cost of one one-shot call: %.2f commands, %.3f ms of Redis command time, %.3f ms of Redis process CPU** "+
		"(INFO commandstats and INFO cpu over %d back-to-back calls; a script's command time includes its inner commands', which are also counted on their own, so it is an upper bound; "+
		"target ≤ 10 commands and ≤ 0.15 ms; was 20 commands before the one-command outcome CAS and batched XACK/XDEL, 27 before that).", cmds, usec/1000, cpu/1000, costCalls)
}
