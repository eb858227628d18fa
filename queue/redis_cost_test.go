package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/redisinfo"
	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// maxCommandsPerCall bounds the Redis commands one one-shot call costs
// (submit, delivery, finish with its notice; scripts' inner commands
// included), as counted by INFO commandstats: the target. The
// design costs 9 plus the amortized share of the batched XACK/XDEL (was 20
// before the one-command outcome CAS; 27 before that).
const maxCommandsPerCall = 10

// MeasureRedisCost runs n one-shot calls through a queue on the Redis at
// url with one in-process worker and returns the commands and Redis CPU
// µs per call (INFO commandstats delta).
func measureRedisCost(t testing.TB, url string, n int) (cmds, usec float64, per map[string]int64) {
	t.Helper()
	ctx := context.Background()
	q, err := NewRedis(Config{RedisURL: url, Name: fmt.Sprintf("cost%d", queueSeq.Add(1))}, Deps{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	w, err := q.NewWorker(WorkerConfig{Concurrency: 1, ReadBlock: 10 * time.Second}, HandlerFunc(
		func(_ context.Context, j Job) (Reply, error) { return Reply{Payload: j.Payload}, nil }))
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(wctx) }()
	defer func() { stop(); <-done }()
	rdb := redis.NewClient(&redis.Options{Addr: strings.TrimSuffix(strings.TrimPrefix(url, "redis://"), "/0")})
	defer rdb.Close()
	for i := range 5 { // warm: scripts loaded, groups made
		if _, err := q.Do(ctx, Job{Payload: []byte("w" + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond) // the worker is blocked in its next read
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	cpu0, err := redisinfo.CPU(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := q.Do(ctx, Job{Payload: []byte("x" + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	cpu1, err := redisinfo.CPU(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	st, err := redisinfo.CommandStats(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Redis process CPU (user+sys): %.0f µs per call", (cpu1-cpu0)/float64(n))
	t.Logf("µs by command over %d calls: %v", n, st.PerUsec)
	return float64(st.Calls) / float64(n), float64(st.Usec) / float64(n), st.Per
}

// TestRedisCommandsPerCall asserts the command budget of a one-shot call
// on real Redis.
func TestRedisCommandsPerCall(t *testing.T) {
	srv := redistest.Start(t, false)
	cmds, usec, per := measureRedisCost(t, srv.URL(), 50)
	t.Logf("per call: %.2f commands, %.0f µs Redis command time; %v", cmds, usec, per)
	if cmds > maxCommandsPerCall {
		t.Fatalf("one call costs %.1f Redis commands, want <= %d (%v)", cmds, maxCommandsPerCall, per)
	}
}
