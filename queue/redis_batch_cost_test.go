package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/redisinfo"
	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// maxCommandsPerBatchItem bounds the Redis commands one batch item costs
// while batch items fill a worker's batch slots: a one-shot call's 9, one
// more read (the interactive lane is looked at before the batch one), and
// with an interactive reserve the wake of the read that holds the reserve
// (one XADD, the XREADGROUP it ends, a share of the batched XACK/XDEL),
// with room for the heartbeats and flushes of a short run. A worker that
// polled or spun while its batch slots are full would blow it.
const maxCommandsPerBatchItem = 15

// TestRedisBatchCommandsPerItem measures the commands per batch item of a
// saturated worker (Concurrency 2, items of 10 ms) with and without an
// interactive reserve, and asserts the budget; with the reserve, at most
// one wake entry is added per item.
func TestRedisBatchCommandsPerItem(t *testing.T) {
	srv := redistest.Start(t, false)
	rdb := redis.NewClient(&redis.Options{Addr: strings.TrimSuffix(strings.TrimPrefix(srv.URL(), "redis://"), "/0")})
	defer rdb.Close()
	for _, reserve := range []int{-1, 1} {
		t.Run("reserve"+strconv.Itoa(max(reserve, 0)), func(t *testing.T) {
			ctx := context.Background()
			q, err := NewRedis(Config{RedisURL: srv.URL(), Name: fmt.Sprintf("bcost%d", queueSeq.Add(1))}, Deps{Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			var running, maxSeen atomic.Int64
			defer runWorker(t, q, WorkerConfig{Concurrency: 2, InteractiveReserve: reserve, ReadBlock: 10 * time.Second}, HandlerFunc(
				func(ctx context.Context, j Job) (Reply, error) {
					n := running.Add(1)
					defer running.Add(-1)
					for m := maxSeen.Load(); n > m && !maxSeen.CompareAndSwap(m, n); m = maxSeen.Load() {
					}
					time.Sleep(10 * time.Millisecond)
					return Reply{Payload: j.Payload}, nil
				}))()
			for i := range 3 { // warm: scripts loaded, groups made
				if _, err := q.Do(ctx, Job{Lane: LaneBatch, Payload: []byte("w" + strconv.Itoa(i))}); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(50 * time.Millisecond)
			if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			const n = 60
			start := time.Now()
			var rs []<-chan result
			for i := range n {
				rs = append(rs, doAsync(ctx, q, Job{Lane: LaneBatch, Payload: []byte("x" + strconv.Itoa(i))}))
			}
			for _, ch := range rs {
				if r := recv(t, ch, "batch item"); r.err != nil {
					t.Fatal(r.err)
				}
			}
			wall := time.Since(start)
			st, err := redisinfo.CommandStats(ctx, rdb)
			if err != nil {
				t.Fatal(err)
			}
			per := float64(st.Calls) / n
			t.Logf("InteractiveReserve %d: %.2f commands per batch item (%d items in %v, 2 at once at most): %v", reserve, per, n, wall.Round(time.Millisecond), st.Per)
			if per > maxCommandsPerBatchItem {
				t.Fatalf("a batch item costs %.1f Redis commands, want <= %d (%v)", per, maxCommandsPerBatchItem, st.Per)
			}
			if x := st.Per["xadd"]; x > 2*n {
				t.Fatalf("%d XADDs for %d items: more than the submission and one wake per item", x, n)
			}
			if m := maxSeen.Load(); m != 2 {
				t.Fatalf("at most %d batch items ran at once, want 2", m)
			}
		})
	}
}
