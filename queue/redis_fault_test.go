package queue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// faultQueue returns a caller-side Redis queue for fault tests.
func faultQueue(t *testing.T, srv *redistest.Server, name string, cfg Config) *Redis {
	t.Helper()
	cfg.RedisURL, cfg.Name = srv.URL(), name
	cfg.VisibilityTimeout = cmpDur(cfg.VisibilityTimeout, testscale.D(time.Second))
	cfg.LivenessTTL = cmpDur(cfg.LivenessTTL, testscale.D(time.Second))
	q, err := NewRedis(cfg, Deps{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return q
}

// cmpDur returns a, or b when a is zero.
func cmpDur(a, b time.Duration) time.Duration {
	if a == 0 {
		return b
	}
	return a
}

// assertDrained checks that no job of queue name is left unfinished or
// unacknowledged in Redis. Workers acknowledge finished entries in batches
// (at most ackFlushEvery later), so it waits for that.
func assertDrained(t *testing.T, rdb *redis.Client, name string) {
	t.Helper()
	ctx := testCtx(t)
	k := newKeyspace("airlock", name)
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	if n, err := rdb.ZCount(ctx, k.active(), now, "+inf").Result(); err != nil || n != 0 {
		t.Errorf("live jobs = %d, %v; want 0", n, err)
	}
	var last string
	deadline := time.Now().Add(testscale.D(3 * ackFlushEvery))
	for {
		last = ""
		for _, s := range []string{k.stream(), k.batchStream()} {
			p, err := rdb.XPending(ctx, s, group).Result()
			if err != nil || p.Count != 0 {
				last += fmt.Sprintf("%s: pending %+v, %v; ", s, p, err)
			}
			if n, err := rdb.XLen(ctx, s).Result(); err != nil || n != 0 {
				last += fmt.Sprintf("%s: length %d, %v; ", s, n, err)
			}
		}
		if last == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("streams not drained: %s", last)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRedisWorkerKilledMidJob: a worker process killed with SIGKILL while
// running a job; another worker reclaims it after the visibility timeout
// and the caller receives exactly one result, from the second attempt.
func TestRedisWorkerKilledMidJob(t *testing.T) {
	srv := redistest.Start(t, false)
	const name = "kill9"
	q := faultQueue(t, srv, name, Config{})
	a := startWorkerProc(t, srv, name, "A")
	res := doAsync(testCtx(t), q, Job{ID: "job-1", Payload: []byte("block-first:x")})
	a.waitLine(waitTimeout, "started job-1 1")
	a.kill(syscall.SIGKILL)
	b := startWorkerProc(t, srv, name, "B")
	r := recv(t, res, "result")
	if r.err != nil || string(r.out) != "B:2:x" {
		t.Fatalf("Do = %q, %v; want B's second attempt", r.out, r.err)
	}
	b.waitLine(waitTimeout, "started job-1 2")
	// The stored outcome is that one result; asking again does not rerun.
	if out, err := q.Do(testCtx(t), Job{ID: "job-1", Payload: []byte("echo:again")}); err != nil || string(out) != "B:2:x" {
		t.Fatalf("second Do = %q, %v", out, err)
	}
	assertDrained(t, srv.Client(t), name)
}

// TestRedisStalledWorkerIsFenced: a worker stopped (SIGSTOP) past the
// visibility timeout loses its job to another worker; when resumed it
// finishes the job anyway, and its stale result is discarded.
func TestRedisStalledWorkerIsFenced(t *testing.T) {
	srv := redistest.Start(t, false)
	const name = "stall"
	q := faultQueue(t, srv, name, Config{})
	a := startWorkerProc(t, srv, name, "A")
	gate := filepath.Join(t.TempDir(), "gate")
	res := doAsync(testCtx(t), q, Job{ID: "job-1", Payload: []byte("wait-file:" + gate + ":x")})
	a.waitLine(waitTimeout, "started job-1 1")
	a.kill(syscall.SIGSTOP)
	startWorkerProc(t, srv, name, "B")
	r := recv(t, res, "result")
	if r.err != nil || string(r.out) != "B:2:x" {
		t.Fatalf("Do = %q, %v; want B's result", r.out, r.err)
	}
	a.kill(syscall.SIGCONT)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	a.waitLine(waitTimeout, "stale result discarded", "job=job-1")
	if out, err := q.Do(testCtx(t), Job{ID: "job-1"}); err != nil || string(out) != "B:2:x" {
		t.Fatalf("stored outcome after A resumed = %q, %v; want B's", out, err)
	}
	assertDrained(t, srv.Client(t), name)
}

// TestRedisPoisonJobDeadLetters: a job that kills every worker running it
// is dead-lettered after MaxDeliveries, and its caller is told so.
func TestRedisPoisonJobDeadLetters(t *testing.T) {
	srv := redistest.Start(t, false)
	const name = "poison"
	q := faultQueue(t, srv, name, Config{MaxDeliveries: 2})
	res := doAsync(testCtx(t), q, Job{ID: "poison-1", Owner: "mallory", Payload: []byte("exit")})
	deaths := 0
	var r result
supervise: // restart the worker whenever it dies, like systemd would
	for i := 0; ; i++ {
		p := startWorkerProc(t, srv, name, fmt.Sprintf("W%d", i), "AQ_MAXDEL=2")
		select {
		case r = <-res:
			break supervise
		case <-p.done:
			deaths++
		case <-time.After(waitTimeout):
			t.Fatal("no outcome and no worker death")
		}
	}
	if !errors.Is(r.err, ErrDeadLetter) {
		t.Fatalf("Do = %q, %v; want ErrDeadLetter", r.out, r.err)
	}
	if deaths != 2 {
		t.Errorf("workers died %d times, want 2 (MaxDeliveries)", deaths)
	}
	rdb := srv.Client(t)
	msgs, err := rdb.XRange(testCtx(t), newKeyspace("airlock", name).dead(), "-", "+").Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("dead letters = %v, %v", msgs, err)
	}
	if v := msgs[0].Values; v["id"] != "poison-1" || v["attempts"] != "2" || v["owner"] != "mallory" || v["pl"] != "exit" {
		t.Fatalf("dead letter = %v", v)
	}
	assertDrained(t, rdb, name)
}

// TestRedisSessionHolderKilled: the caller of a session job whose worker
// is killed gets ErrSessionLost (never a hang), and so do later callers.
func TestRedisSessionHolderKilled(t *testing.T) {
	srv := redistest.Start(t, false)
	const name = "sesskill"
	q := faultQueue(t, srv, name, Config{})
	a := startWorkerProc(t, srv, name, "A")
	ctx := testCtx(t)
	if out, err := q.Do(ctx, Job{Payload: []byte("open:s1")}); err != nil || string(out) != "A:1:s1" {
		t.Fatalf("open = %q, %v", out, err)
	}
	if out, err := q.Do(ctx, Job{Session: "s1", Payload: []byte("echo:y")}); err != nil || string(out) != "A:1:y" {
		t.Fatalf("session job = %q, %v", out, err)
	}
	res := doAsync(ctx, q, Job{ID: "sj", Session: "s1", Payload: []byte("block-first:z")})
	a.waitLine(waitTimeout, "started sj 1")
	a.kill(syscall.SIGKILL)
	if r := recv(t, res, "session job outcome"); !errors.Is(r.err, ErrSessionLost) {
		t.Fatalf("waiting caller: %q, %v; want ErrSessionLost", r.out, r.err)
	}
	if _, err := q.Do(ctx, Job{Session: "s1", Payload: []byte("echo:w")}); !errors.Is(err, ErrSessionLost) {
		t.Fatalf("later caller: %v; want ErrSessionLost", err)
	}
}

// TestRedisDownRefusesQuickly: with Redis down, a new submission fails
// with ErrUnavailable instead of hanging.
func TestRedisDownRefusesQuickly(t *testing.T) {
	srv := redistest.Start(t, false)
	q := faultQueue(t, srv, "down", Config{})
	srv.Stop()
	start := time.Now()
	if _, err := q.Do(testCtx(t), Job{}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v; want ErrUnavailable", err)
	}
	t.Logf("refused after %v", time.Since(start)) // informative only
	if err := q.Ping(testCtx(t)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Ping = %v", err)
	}
}

// TestRedisRestartLosesNothing: 500 jobs through 3 worker processes while
// Redis (AOF on) is restarted and left down for a second. Every job gets
// exactly one result; callers already waiting keep waiting across the
// restart; submissions refused while Redis is down (ErrUnavailable) are
// retried with the same job ID, as the dispatcher would.
func TestRedisRestartLosesNothing(t *testing.T) {
	srv := redistest.Start(t, true)
	const name, jobs, maxCallers = "restart", 500, 64
	q := faultQueue(t, srv, name, Config{VisibilityTimeout: testscale.D(3 * time.Second), LivenessTTL: testscale.D(3 * time.Second)})
	for _, id := range []string{"W1", "W2", "W3"} {
		startWorkerProc(t, srv, name, id, "AQ_CONC=4", "AQ_VIS_MS=3000", "AQ_LIVE_MS=3000")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()
	var (
		mu        sync.Mutex
		got       = map[int]string{}
		refused   int
		completed = make(chan struct{}, jobs)
		slots     = make(chan struct{}, maxCallers)
		wg        sync.WaitGroup
	)
	call := func(i int) {
		defer func() { <-slots }()
		id := fmt.Sprintf("job-%d", i)
		for {
			out, err := q.Do(ctx, Job{ID: id, Payload: fmt.Appendf(nil, "sleep:10:%d", i)})
			if errors.Is(err, ErrUnavailable) && ctx.Err() == nil {
				mu.Lock()
				refused++
				mu.Unlock()
				time.Sleep(100 * time.Millisecond)
				continue // same ID: attaches if it was accepted after all
			}
			mu.Lock()
			if err != nil {
				t.Errorf("%s: %v", id, err)
			} else if prev, dup := got[i]; dup {
				t.Errorf("%s answered twice: %q then %q", id, prev, out)
			} else {
				got[i] = string(out)
			}
			mu.Unlock()
			completed <- struct{}{}
			return
		}
	}
	wg.Go(func() { // paced submissions, at most maxCallers waiting at once
		for i := range jobs {
			slots <- struct{}{}
			wg.Go(func() { call(i) })
			time.Sleep(2 * time.Millisecond)
		}
	})
	for range jobs / 3 {
		recv(t, completed, "a third of the jobs")
	}
	srv.Stop()
	mu.Lock()
	atRestart := len(got)
	mu.Unlock()
	probe := Job{ID: "probe", Payload: []byte("echo:probe")}
	if _, err := q.Do(ctx, probe); !errors.Is(err, ErrUnavailable) {
		t.Errorf("submission while Redis is down: %v; want ErrUnavailable", err)
	}
	time.Sleep(time.Second)
	srv.Run()
	for { // the client may refuse for a moment after Redis returns
		out, err := q.Do(ctx, probe)
		if errors.Is(err, ErrUnavailable) && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if err != nil || !strings.HasSuffix(string(out), ":probe") {
			t.Errorf("probe retried after the restart: %q, %v", out, err)
		}
		break
	}
	wg.Wait()
	retried := 0
	for i := range jobs {
		out, ok := got[i]
		parts := strings.Split(out, ":")
		if !ok || len(parts) != 3 || parts[2] != strconv.Itoa(i) {
			t.Errorf("job %d: result %q", i, out)
			continue
		}
		if parts[1] != "1" {
			retried++
		}
	}
	t.Logf("%d jobs answered once each (%d after the restart began); %d ran more than once; %d submissions refused while Redis was down",
		len(got), len(got)-atRestart, retried, refused)
	if len(got) != jobs {
		t.Fatalf("%d of %d jobs answered", len(got), jobs)
	}
	if n := q.missedNotices.Load(); n != 0 {
		t.Errorf("%d callers were answered only at their deadline (lost wake-up)", n)
	}
	assertDrained(t, srv.Client(t), name)
}
