package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// maxCommandsPerCall bounds the Redis commands one one-shot call costs
// (submit, delivery, finish with its notice; scripts' inner commands
// included), as counted by INFO commandstats: the target. The
// design costs 9 plus the amortized share of the batched XACK/XDEL (was 20
// before the one-command outcome CAS; 27 before that).
const maxCommandsPerCall = 10

// commandStats sums INFO commandstats: commands run and their µs.
func commandStats(ctx context.Context, rdb *redis.Client) (calls, usec int64, per, perUsec map[string]int64, err error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, 0, nil, nil, err
	}
	per = map[string]int64{}
	perUsec = map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		if name == "info" || name == "config|resetstat" {
			continue
		}
		for _, f := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				calls += n
				per[name] = n
			case "usec":
				usec += n
				perUsec[name] = n
			}
		}
	}
	return calls, usec, per, perUsec, nil
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
	cpu0, err := redisCPU(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := q.Do(ctx, Job{Payload: []byte("x" + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	cpu1, err := redisCPU(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	calls, us, per, perUsec, err := commandStats(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Redis process CPU (user+sys): %.0f µs per call", (cpu1-cpu0)/float64(n))
	t.Logf("µs by command over %d calls: %v", n, perUsec)
	return float64(calls) / float64(n), float64(us) / float64(n), per
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
