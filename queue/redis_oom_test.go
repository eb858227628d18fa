package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// TestRedisFullRefusesSubmit: with Redis full (maxmemory, noeviction) a
// submit is refused as ErrUnavailable before anything is enqueued, Ping
// (the readiness check) fails, and once memory is freed calls run again.
func TestRedisFullRefusesSubmit(t *testing.T) {
	srv := redistest.Start(t, false)
	rdb := srv.Client(t)
	ctx := context.Background()
	name := fmt.Sprintf("oom%d", queueSeq.Add(1))
	q, err := NewRedis(Config{RedisURL: srv.URL(), Name: name}, Deps{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	w, err := q.NewWorker(WorkerConfig{Concurrency: 1, ReadBlock: 200 * time.Millisecond}, testHandler("w", func(Job) {}))
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(wctx) }()
	defer func() { stop(); <-done }()
	if _, err := q.Do(ctx, Job{Payload: []byte("echo:a")}); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil { // everything is over the limit
		t.Fatal(err)
	}
	_, err = q.Do(ctx, Job{ID: "full-1", Payload: []byte("echo:b")})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "full") {
		t.Fatalf("submit to a full Redis: %v, want ErrUnavailable naming a full Redis", err)
	}
	if err := q.Ping(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Ping on a full Redis: %v, want ErrUnavailable", err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZScore(ctx, q.keys.active(), "full-1").Err(); err == nil {
		t.Fatalf("a refused job was admitted to the active set")
	}
	if n := rdb.Exists(ctx, q.keys.res("full-1")).Val(); n != 0 {
		t.Fatalf("a refused job left an outcome behind")
	}
	if err := q.Ping(ctx); err != nil {
		t.Fatalf("Ping after freeing: %v", err)
	}
	out, err := q.Do(ctx, Job{ID: "full-1", Payload: []byte("echo:b")})
	if err != nil || !strings.HasSuffix(string(out), ":1:b") {
		t.Fatalf("after freeing: %q, %v; want a first run", out, err)
	}
}

// TestRedisFullKeepsSessionsAlive: with Redis really full (maxmemory
// reached, noeviction) for four liveness TTLs while a session job runs,
// the worker's liveness key never lapses (its heartbeat uses no command a
// full Redis refuses) and the job's caller gets the job's result once
// memory is freed, not ErrSessionLost. The liveness write was a SET,
// refused when full: the key expired while the worker was alive, and the
// session call got session_lost (issue 26).
func TestRedisFullKeepsSessionsAlive(t *testing.T) {
	srv := redistest.Start(t, false)
	rdb := srv.Client(t)
	live := testscale.D(time.Second)
	name := fmt.Sprintf("oomsess%d", queueSeq.Add(1))
	q := faultQueue(t, srv, name, Config{LivenessTTL: live, VisibilityTimeout: live})
	runWorker(t, q, WorkerConfig{ID: "holder"}, testHandler("holder", func(Job) {}))
	ctx := testCtx(t)
	if out, err := q.Do(ctx, Job{Payload: []byte("open:s1")}); err != nil || string(out) != "holder:1:s1" {
		t.Fatalf("open = %q, %v", out, err)
	}
	full := 4 * live
	res := doAsync(ctx, q, Job{ID: "sj", Session: "s1", Payload: fmt.Appendf(nil, "sleep:%d:z", (full / 2).Milliseconds())})
	free := srv.Fill(t)
	if err := rdb.Set(ctx, "probe", "1", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "OOM ") {
		t.Fatalf("SET on the filled Redis: %v, want OOM", err)
	}
	alive := q.keys.alive("holder")
	for end := time.Now().Add(full); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if n, err := rdb.Exists(ctx, alive).Result(); err != nil || n != 1 {
			free()
			t.Fatalf("the live worker's liveness key is gone while Redis is full: %d, %v", n, err)
		}
	}
	free()
	if r := recv(t, res, "the session job"); r.err != nil || string(r.out) != "holder:1:z" {
		t.Fatalf("session job across a full Redis = %q, %v; want its result", r.out, r.err)
	}
	if out, err := q.Do(ctx, Job{Session: "s1", Payload: []byte("echo:after")}); err != nil || string(out) != "holder:1:after" {
		t.Fatalf("the next session job = %q, %v", out, err)
	}
}
