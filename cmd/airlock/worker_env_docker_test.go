package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/redis/go-redis/v9"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/environments/envtest"
	"github.com/airlock-dev/airlock/environments/envtest/envuse"
	"github.com/airlock-dev/airlock/internal/jobs"
	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/queue"
	"github.com/airlock-dev/airlock/state"
)

// TestWorkersEnvironmentWiring: two `airlock worker` stacks on one Redis
// (one Docker daemon; the second with --environment-namespace, so it
// genuinely lacks the environment's image): the environment's calls go to
// the worker holding it; once it stops, the other builds the environment
// from the source the build kept in the state store (the caller sees
// building events), runs the call, and advertises it.
func TestWorkersEnvironmentWiring(t *testing.T) {
	requireSandbox(t)
	dc := envtest.Docker(t)
	srv := redistest.Start(t, false)
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	store := state.NewRedis(rdb, stateKeyPrefix) // the workers' state store
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	rec, err := envuse.BuildUse(ctx, envuse.Manager(dc, store), t.TempDir(), envuse.UseName)
	if err != nil {
		t.Fatal(err)
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	ns := "c" + hex.EncodeToString(b[:])
	nsTag := "airlock/env-" + rec.Name + "." + ns + ":" + rec.Hash
	t.Cleanup(func() {
		_, _ = dc.ImageRemove(context.Background(), nsTag, image.RemoveOptions{Force: true, PruneChildren: true})
	})

	clearEnv(t)
	bases := envtest.Bases()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	start := func(extra ...string) *stack {
		t.Helper()
		var errb bytes.Buffer
		args := append([]string{"--redis", srv.URL(), "--queue", "wenv", "--concurrency", "1", "--pool", "0",
			"--python-image", bases["python"], "--shell-image", bases["shell"]}, extra...)
		sf, _, _, ok := parseWorkerFlags(args, &errb)
		if !ok {
			t.Fatalf("worker flags: %s", errb.String())
		}
		st, err := buildWorker(ctx, &sf, log)
		if err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		t.Cleanup(func() { once.Do(st.close) })
		return st
	}
	a := start()
	start("--environment-namespace", ns)

	q, err := queue.NewRedis(queue.Config{RedisURL: srv.URL(), Name: "wenv"}, queue.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	holders := func() []string {
		ids, _ := q.EnvironmentHolders(ctx, rec.Hash)
		return ids
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(testscale.D(time.Minute))
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s never held (holders %v)", what, holders())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitUntil("one holder", func() bool { return len(holders()) == 1 })
	holderA := holders()[0]

	cl := jobs.NewClient(q, jobs.ClientConfig{})
	call := func() int {
		t.Helper()
		var mu sync.Mutex
		n := 0
		req := core.Request{Language: core.Python, Code: envuse.UseProbe, Owner: "t", Limits: core.Limits{Timeout: testscale.D(time.Minute)}}
		environments.Target{Name: rec.Name, Base: rec.Base, Image: rec.Image, Hash: rec.Hash}.Apply(&req)
		res, err := cl.Exec(core.WithSink(ctx, func(ev core.Event) {
			if ev.Kind == core.EventBuilding {
				mu.Lock()
				n++
				mu.Unlock()
			}
		}), req)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Stdout, "toolz airlockuse 42") {
			t.Fatalf("the call did not run in the environment: %+v", res)
		}
		mu.Lock()
		defer mu.Unlock()
		return n
	}
	for range 3 {
		if n := call(); n != 0 {
			t.Fatalf("a call on the holder saw %d building events", n)
		}
	}
	if _, err := dc.ImageInspect(ctx, nsTag); err == nil {
		t.Fatalf("the second worker built %s while the holder served", nsTag)
	}
	a.close()
	waitUntil("no holder", func() bool { return len(holders()) == 0 })
	if n := call(); n == 0 {
		t.Fatal("the worker lacking the image ran the call without a building event")
	}
	if _, err := dc.ImageInspect(ctx, nsTag); err != nil {
		t.Fatalf("the second worker's image: %v", err)
	}
	waitUntil("the second worker to advertise it", func() bool {
		h := holders()
		return len(h) == 1 && !slices.Contains(h, holderA)
	})
	if n := call(); n != 0 {
		t.Fatalf("a call after the build saw %d building events", n)
	}
}
