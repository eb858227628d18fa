package state_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/queue"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/state/statetest"
)

func TestRedisContract(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, false)
	// Configured as serve's client is (queue.Dial): context deadlines bound calls.
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", srv.Port()), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	var n atomic.Int64
	statetest.Run(t, func(t *testing.T) state.Store {
		return state.NewRedis(rdb, fmt.Sprintf("test%d:", n.Add(1)))
	})
}

// TestRedisKeys checks the key layout: owner as hash tag, "{_}" for the
// server-wide owner, and a TTL on every key written with one.
func TestRedisKeys(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, false)
	rdb := srv.Client(t)
	s := state.NewRedis(rdb, "al:")
	ctx := context.Background()
	ttl := time.Minute
	if _, err := s.Put(ctx, state.Key{Kind: "session", Owner: "alice", ID: "s1"}, []byte("x"), state.PutOptions{TTL: ttl}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, state.Key{Kind: "session", Owner: "", ID: "g"}, []byte("x"), state.PutOptions{TTL: ttl}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, state.Key{Kind: "session", Owner: "we{ird}", ID: "w"}, []byte("x"), state.PutOptions{TTL: ttl}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, state.Key{Kind: "run", Owner: "alice", ID: "r1"}, []byte("e"), 0, ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(ctx, state.Key{Kind: "quota", Owner: "alice", ID: "bytes"}, 5, 0, ttl); err != nil {
		t.Fatal(err)
	}
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"al:{alice}:session:s1": true, "al:{alice}:session#idx": true, "al:{_}:session:g": true,
		"al:{_}:session#idx": true, "al:{alice}:run#log:r1": true, "al:{alice}:quota#ctr:bytes": true,
		"al:{we%7Bird%7D}:session:w": true, "al:{we%7Bird%7D}:session#idx": true}
	if len(keys) != len(want) {
		t.Fatalf("keys = %v; want %d", keys, len(want))
	}
	for _, k := range keys {
		if !want[k] {
			t.Fatalf("unexpected key %q (all: %v)", k, keys)
		}
		d, err := rdb.PTTL(ctx, k).Result()
		if err != nil || d <= 0 || d > ttl {
			t.Fatalf("key %s has TTL %v, %v; want ≤ %v", k, d, err, ttl)
		}
		if strings.Count(k, "{") != 1 {
			t.Fatalf("key %s has more than one hash tag", k)
		}
	}
	if _, err := s.Put(ctx, state.Key{Kind: "bad:kind", ID: "x"}, nil, state.PutOptions{}); core.CodeOf(err) != core.ErrInvalid {
		t.Fatalf("kind with ':' = %v; want invalid", err)
	}
}

// TestRedisFull fills a real Redis to maxmemory (noeviction): Put, Append
// and Add return ErrUnavailable and write nothing, Ping reports it; once
// the limit is lifted, writes work again.
func TestRedisFull(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, false)
	rdb := srv.Client(t)
	ctx := context.Background()
	s := state.NewRedis(rdb, "full:")
	k := state.Key{Kind: "run", Owner: "alice", ID: "r1"}
	if _, err := s.Put(ctx, k, []byte("before"), state.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Put(ctx, k, []byte("after"), state.PutOptions{IfVersion: 1})
	if !errors.Is(err, state.ErrUnavailable) || !strings.Contains(err.Error(), "OOM") {
		t.Fatalf("put on a full Redis = %v; want ErrUnavailable (OOM)", err)
	}
	_, err = s.Put(ctx, state.Key{Kind: "run", Owner: "alice", ID: "new"}, []byte("x"), state.PutOptions{})
	if !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("create on a full Redis = %v; want ErrUnavailable", err)
	}
	if _, err := s.Append(ctx, k, []byte("e"), 0, 0); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("append on a full Redis = %v; want ErrUnavailable", err)
	}
	if _, err := s.Add(ctx, k, 1, 0, 0); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("add on a full Redis = %v; want ErrUnavailable", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("ping on a full Redis = %v; want ErrUnavailable", err)
	}
	// Reads still work and show nothing was written.
	it, err := s.Get(ctx, k)
	if err != nil || string(it.Value) != "before" || it.Version != 1 {
		t.Fatalf("get on a full Redis = %+v, %v; want the old record", it, err)
	}
	if n, err := rdb.Exists(ctx, "full:{alice}:run:new", "full:{alice}:run#log:r1", "full:{alice}:run#ctr:r1").Result(); err != nil || n != 0 {
		t.Fatalf("a refused write left %d keys (%v)", n, err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Put(ctx, k, []byte("after"), state.PutOptions{IfVersion: 1}); err != nil || v != 2 {
		t.Fatalf("put after freeing = %d, %v", v, err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestRedisDown checks that a stopped Redis is ErrUnavailable, promptly.
func TestRedisDown(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, false)
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", srv.Port()), MaxRetries: -1,
		DialTimeout: time.Second})
	defer rdb.Close()
	s := state.NewRedis(rdb, "down:")
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	start := time.Now()
	_, err := s.Put(ctx, state.Key{Kind: "run", ID: "x"}, []byte("x"), state.PutOptions{})
	if !errors.Is(err, state.ErrUnavailable) || core.CodeOf(err) != core.ErrUnavailable {
		t.Fatalf("put on a stopped Redis = %v; want ErrUnavailable", err)
	}
	if _, err := s.Get(ctx, state.Key{Kind: "run", ID: "x"}); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("get on a stopped Redis = %v; want ErrUnavailable", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("ping on a stopped Redis = %v", err)
	}
	if d := time.Since(start); d > testscale.D(8*time.Second) {
		t.Fatalf("took %v", d)
	}
}

// TestRedisTwoReplicas uses two stores on two separate clients, as two
// serve replicas would: a record written through one is read, CASed and
// deleted through the other, and a Range waiting on one is woken by an
// Append through the other.
func TestRedisTwoReplicas(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, false)
	a := state.NewRedis(srv.Client(t), "rep:")
	b := state.NewRedis(srv.Client(t), "rep:")
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(20*time.Second))
	defer cancel()
	k := state.Key{Kind: "session", Owner: "alice", ID: "s1"}
	if _, err := a.Put(ctx, k, []byte("from a"), state.PutOptions{IfVersion: -1}); err != nil {
		t.Fatal(err)
	}
	it, err := b.Get(ctx, k)
	if err != nil || string(it.Value) != "from a" {
		t.Fatalf("b reads %+v, %v", it, err)
	}
	if _, err := b.Put(ctx, k, []byte("from b"), state.PutOptions{IfVersion: it.Version}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Put(ctx, k, []byte("stale a"), state.PutOptions{IfVersion: it.Version}); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("stale CAS through a = %v; want conflict", err)
	}
	done := make(chan []state.Entry, 1)
	go func() {
		es, _ := b.Range(ctx, k, 0, 0, testscale.D(10*time.Second))
		done <- es
	}()
	time.Sleep(200 * time.Millisecond)
	if _, err := a.Append(ctx, k, []byte("ev1"), 0, time.Minute); err != nil {
		t.Fatal(err)
	}
	select {
	case es := <-done:
		if len(es) != 1 || es[0].Seq != 1 || string(es[0].Data) != "ev1" {
			t.Fatalf("b's Range = %+v", es)
		}
	case <-time.After(testscale.D(5 * time.Second)):
		t.Fatal("b's Range was not woken by a's Append")
	}
	if err := b.Delete(ctx, k, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get(ctx, k); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("a after b's delete = %v", err)
	}
}

// cmdCounter is a go-redis hook counting the commands a client sends.
type cmdCounter struct{ n atomic.Int64 }

func (c *cmdCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !connSetup(cmd) {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if !connSetup(cmd) {
				c.n.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

// connSetup reports the commands go-redis sends on a new connection
// (HELLO, CLIENT SETINFO), which are not the operation's.
func connSetup(cmd redis.Cmder) bool { return cmd.Name() == "client" || cmd.Name() == "hello" }

// TestRedisCommandsPerCall counts the commands each operation sends (with
// the scripts loaded), so a regression to several round trips shows.
func TestRedisCommandsPerCall(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, false)
	rdb := srv.Client(t)
	var cnt cmdCounter
	rdb.AddHook(&cnt)
	s := state.NewRedis(rdb, "cost:")
	ctx := context.Background()
	k := state.Key{Kind: "session", Owner: "alice", ID: "s1"}
	// Load the scripts first (EVALSHA falls back to EVAL once).
	_, _ = s.Put(ctx, k, []byte("x"), state.PutOptions{})
	_, _ = s.Get(ctx, k)
	_, _ = s.Append(ctx, k, []byte("x"), 0, 0)
	_, _ = s.Add(ctx, k, 1, 0, 0)
	_ = s.Delete(ctx, state.Key{Kind: "session", Owner: "alice", ID: "none"}, 0)
	for _, c := range []struct {
		name string
		want int64
		op   func() error
	}{
		{"put", 1, func() error { _, err := s.Put(ctx, k, []byte("y"), state.PutOptions{TTL: time.Minute}); return err }},
		{"get", 1, func() error { _, err := s.Get(ctx, k); return err }},
		{"append", 1, func() error { _, err := s.Append(ctx, k, []byte("y"), 0, time.Minute); return err }},
		{"range", 1, func() error { _, err := s.Range(ctx, k, 0, 10, 0); return err }},
		{"range-wait", 1, func() error { _, err := s.Range(ctx, k, 0, 10, time.Second); return err }},
		{"add", 1, func() error { _, err := s.Add(ctx, k, 1, 10, time.Minute); return err }},
		{"list-1", 3, func() error { _, err := s.List(ctx, k.Kind, k.Owner, "", 10); return err }},
		{"delete", 1, func() error { return s.Delete(ctx, k, 0) }},
	} {
		before := cnt.n.Load()
		if err := c.op(); err != nil {
			t.Fatal(err)
		}
		if n := cnt.n.Load() - before; n != c.want {
			t.Fatalf("%s sends %d Redis commands; want %d", c.name, n, c.want)
		}
	}
}

// TestRedisPaused stops a real redis-server with SIGSTOP: a Put with a
// 500ms deadline on a ContextTimeoutEnabled client returns ErrUnavailable
// within the deadline (not a hang) and, once Redis is
// continued, the store works again.
func TestRedisPaused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, false)
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", srv.Port()), ContextTimeoutEnabled: true})
	defer rdb.Close()
	s := state.NewRedis(rdb, "pause:")
	k := state.Key{Kind: "run", Owner: "alice", ID: "r"}
	if _, err := s.Put(context.Background(), k, []byte("x"), state.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	resume := srv.Pause(t)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	start := time.Now()
	_, err := s.Put(ctx, k, []byte("y"), state.PutOptions{})
	cancel()
	if !errors.Is(err, state.ErrUnavailable) || core.CodeOf(err) != core.ErrUnavailable {
		t.Fatalf("put on a paused Redis = %v; want ErrUnavailable", err)
	}
	if d := time.Since(start); d > testscale.D(2*time.Second) {
		t.Fatalf("put on a paused Redis took %v", d)
	}
	resume()
	c2, cancel2 := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel2()
	if _, err := s.Get(c2, k); err != nil {
		t.Fatalf("get after resume: %v", err)
	}
}

// TestRedisStalledRefusesWithinOpTimeout: with Redis stalled (SIGSTOP),
// the operations a request makes (an idempotency reservation is a create
// then a read; readiness a ping) return ErrUnavailable within OpTimeout
// even when the caller's context has no deadline, on a client configured
// as serve's is (queue.NewRedisClient). They waited for the client's read
// timeout and its retry: new calls were refused only after 10 s during a
// 15 s stall, while the queue refused after 2 s (issue 26).
func TestRedisStalledRefusesWithinOpTimeout(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, false)
	rdb, err := queue.NewRedisClient(srv.URL(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	s := state.NewRedis(rdb, "stall:")
	k := state.Key{Kind: "idem", Owner: "alice", ID: "call_1"}
	ctx := context.Background()
	if _, err := s.Get(ctx, k); !errors.Is(err, state.ErrNotFound) { // warms a pooled connection
		t.Fatal(err)
	}
	srv.Pause(t)
	bound := state.OpTimeout + testscale.D(time.Second)
	for name, op := range map[string]func() error{
		"create": func() error {
			_, err := s.Put(ctx, k, []byte("x"), state.PutOptions{TTL: time.Minute, IfVersion: -1})
			return err
		},
		"get":  func() error { _, err := s.Get(ctx, k); return err },
		"ping": func() error { return s.Ping(ctx) },
		"list": func() error { _, err := s.List(ctx, "idem", "alice", "", 10); return err },
	} {
		start := time.Now()
		err := op()
		took := time.Since(start)
		t.Logf("%s on a stalled Redis: %v after %v", name, err, took.Round(10*time.Millisecond))
		if !errors.Is(err, state.ErrUnavailable) || core.CodeOf(err) != core.ErrUnavailable {
			t.Errorf("%s on a stalled Redis = %v; want ErrUnavailable", name, err)
		}
		if took > bound {
			t.Errorf("%s on a stalled Redis took %v, want within %v", name, took, bound)
		}
	}
}
