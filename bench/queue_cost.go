package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

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
	cpu0, err := redisCPU(ctx, rdb)
	if err != nil {
		return 0, 0, 0, err
	}
	for range costCalls {
		if _, err := q.Do(ctx, queue.Job{Payload: []byte("x")}); err != nil {
			return 0, 0, 0, err
		}
	}
	cpu1, err := redisCPU(ctx, rdb)
	if err != nil {
		return 0, 0, 0, err
	}
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, 0, 0, err
	}
	var calls, us int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" || name == "cmdstat_config|resetstat" {
			continue
		}
		for _, f := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				calls += n
			case "usec":
				us += n
			}
		}
	}
	return float64(calls) / costCalls, float64(us) / costCalls, (cpu1 - cpu0) / costCalls, nil
}

// redisCPU reads the Redis process's CPU time (user + system) in µs.
func redisCPU(ctx context.Context, rdb *redis.Client) (float64, error) {
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f * 1e6
		}
	}
	return total, nil
}

// costNote formats the Redis cost for the queue table.
func costNote(cmds, usec, cpu float64) string {
	return fmt.Sprintf("**Redis cost of one one-shot call: %.2f commands, %.3f ms of Redis command time, %.3f ms of Redis process CPU** "+
		"(INFO commandstats and INFO cpu over %d back-to-back calls; a script's command time includes its inner commands', which are also counted on their own, so it is an upper bound; "+
		"target ≤ 10 commands and ≤ 0.15 ms; was 20 commands before the one-command outcome CAS and batched XACK/XDEL, 27 before that).", cmds, usec/1000, cpu/1000, costCalls)
}
