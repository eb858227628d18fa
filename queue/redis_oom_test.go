package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/redistest"
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
