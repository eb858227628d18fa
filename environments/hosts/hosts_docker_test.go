package hosts_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/redis/go-redis/v9"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/environments/envtest"
	"github.com/airlock-dev/airlock/environments/envtest/envuse"
	"github.com/airlock-dev/airlock/environments/hosts"
	"github.com/airlock-dev/airlock/internal/jobs"
	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/queue"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/state"
)

// counting counts the calls a worker's engine ran.
type counting struct {
	next hosts.Handler
	n    atomic.Int64
}

func (c *counting) Handle(ctx context.Context, req core.Request) (core.Result, error) {
	if req.Op == "" || req.Op == core.OpExec {
		c.n.Add(1)
	}
	return c.next.Handle(ctx, req)
}

// worker is one queue worker on its own sandbox engine and holder.
type worker struct {
	holder *hosts.Holder
	calls  *counting
	stop   func()
}

// startWorker starts worker id on q with the image namespace ns.
func startWorker(t *testing.T, q queue.Queue, dc *client.Client, store state.Store, id, ns string) *worker {
	t.Helper()
	cfg := sandbox.DefaultConfig()
	cfg.PoolSize, cfg.ReapInterval = 0, 0
	cfg.Images = map[core.Language]string{core.Python: envtest.Bases()["python"], core.Shell: envtest.Bases()["shell"]}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("w", id)
	eng := sandbox.New(cfg, dc, log)
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h, err := hosts.New(hosts.Config{Namespace: ns, Refresh: time.Second}, dc, envuse.Manager(dc, store), environments.NewRegistry(store), log)
	if err != nil {
		t.Fatal(err)
	}
	c := &counting{next: eng}
	w, err := q.NewWorker(queue.WorkerConfig{ID: id, Concurrency: 1, Environments: h.Held, ReadBlock: 200 * time.Millisecond}, jobs.NewRunner(hosts.NewEngine(c, h)))
	if err != nil {
		t.Fatal(err)
	}
	h.OnHeld(func() { queue.Advertise(w) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
			cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
			defer ccancel()
			_ = eng.Close(cctx)
		})
	}
	t.Cleanup(stop)
	return &worker{holder: h, calls: c, stop: stop}
}

// TestTwoWorkersEnvironment: with two workers on one Redis whose image
// sets differ (one Docker daemon here: the second worker tags and looks
// for its images under its own namespace, so it genuinely lacks the
// environment's image), only the holder takes the environment's jobs; when
// it leaves, the other worker takes the next job, builds the environment
// from the source kept in the state store (the caller sees building
// events), runs the call in it, and then advertises it.
func TestTwoWorkersEnvironment(t *testing.T) {
	dc := envtest.Docker(t)
	srv := redistest.Start(t, false)
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	store := state.NewRedis(rdb, "hosts-test")

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	rec, err := envuse.BuildUse(ctx, envuse.Manager(dc, store), t.TempDir(), envuse.UseName)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := environments.NewRegistry(store).LoadSource(ctx, rec.Name, rec.Hash); err != nil {
		t.Fatalf("the build kept no source in the state store: %v", err)
	}

	var b [3]byte
	_, _ = rand.Read(b[:])
	ns := "t" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		tag := envuse.UseName
		_, _ = dc.ImageRemove(context.Background(), "airlock/env-"+tag+"."+ns+":"+rec.Hash, image.RemoveOptions{Force: true, PruneChildren: true})
	})

	q, err := queue.NewRedis(queue.Config{RedisURL: srv.URL(), Name: "hosts", LivenessTTL: testscale.D(2 * time.Second), VisibilityTimeout: testscale.D(10 * time.Second)}, queue.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	a := startWorker(t, q, dc, store, "a", "")
	bw := startWorker(t, q, dc, store, "b", ns)
	if slices.Contains(bw.holder.Held(), rec.Hash) {
		t.Fatalf("worker b already holds %s under namespace %s", rec.Hash, ns)
	}
	waitHolders(t, q, rec.Hash, []string{"a"})

	cl := jobs.NewClient(q, jobs.ClientConfig{})
	call := func() (core.Result, []core.Event) {
		t.Helper()
		var mu sync.Mutex
		var evs []core.Event
		req := core.Request{Language: core.Python, Code: envuse.UseProbe, Owner: "t", Limits: core.Limits{Timeout: testscale.D(time.Minute)}}
		environments.Target{Name: rec.Name, Base: rec.Base, Image: rec.Image, Hash: rec.Hash}.Apply(&req)
		cctx := core.WithSink(ctx, func(ev core.Event) { mu.Lock(); evs = append(evs, ev); mu.Unlock() })
		res, err := cl.Exec(cctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Stdout, "toolz airlockuse 42") {
			t.Fatalf("the call did not run in the environment: %+v", res)
		}
		mu.Lock()
		defer mu.Unlock()
		return res, slices.Clone(evs)
	}
	for i := range 4 {
		_, evs := call()
		if building(evs) > 0 {
			t.Fatalf("call %d on the holder saw building events: %+v", i, evs)
		}
	}
	if a.calls.n.Load() != 4 || bw.calls.n.Load() != 0 {
		t.Fatalf("calls ran on a %d, b %d times: want every one on the holder a", a.calls.n.Load(), bw.calls.n.Load())
	}

	a.stop()
	waitHolders(t, q, rec.Hash, nil)
	start := time.Now()
	_, evs := call()
	t.Logf("first call on b, with its build from the stored source: %s, %d building events", time.Since(start).Round(time.Second), building(evs))
	if bw.calls.n.Load() != 1 {
		t.Fatalf("b ran %d calls, want 1", bw.calls.n.Load())
	}
	if building(evs) == 0 {
		t.Fatalf("the caller saw no building event while b built the environment: %+v", evs)
	}
	if _, err := dc.ImageInspect(ctx, "airlock/env-"+rec.Name+"."+ns+":"+rec.Hash); err != nil {
		t.Fatalf("b's image of the environment: %v", err)
	}
	waitHolders(t, q, rec.Hash, []string{"b"})
	_, evs = call()
	if building(evs) > 0 || bw.calls.n.Load() != 2 {
		t.Fatalf("the second call on b: building events %d, b's calls %d", building(evs), bw.calls.n.Load())
	}
}

// building counts the building events of evs.
func building(evs []core.Event) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind == core.EventBuilding {
			n++
		}
	}
	return n
}

// waitHolders waits until exactly want advertise hash.
func waitHolders(t *testing.T, q *queue.Redis, hash string, want []string) {
	t.Helper()
	deadline := time.Now().Add(testscale.D(30 * time.Second))
	for {
		got, err := q.EnvironmentHolders(context.Background(), hash)
		if err == nil && slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("holders of %s: %v (%v), want %v", hash, got, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
