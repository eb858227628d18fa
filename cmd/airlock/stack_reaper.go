package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/sandbox"
)

// deadWorkerConfirm is how long a worker's liveness key must stay missing
// before its containers go: half the queue's default liveness TTL (30 s),
// the span after which the queue itself declares the worker's sessions
// lost, so a Redis stall that does not lose a session does not reap it.
const deadWorkerConfirm = 15 * time.Second

// reaperCallTimeout bounds one Redis question of a sweep, so a stalled
// Redis makes a sweep answer "unknown" (spare everything) quickly.
const reaperCallTimeout = 2 * time.Second

// workerLiveness is what the reaper needs of the Redis queue.
type workerLiveness interface {
	WorkerAlive(ctx context.Context, worker string) (bool, error)
	SessionHolder(ctx context.Context, id string) (string, error)
}

// reaper is the second line behind the sandbox's dead man's switch in a
// process with Redis: every interval it removes the containers of dead
// workers of its queue (on any host sharing this Docker daemon) and, on a
// worker, ends its sessions whose binding is gone.
type reaper struct {
	log    *slog.Logger
	eng    *sandbox.Engine
	own    bool // eng was made for the reaper alone: ping, local reap, close
	alive  workerLiveness
	queue  string
	worker string // this process's worker id; "" when it runs none
	every  time.Duration
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

// newWorkerID names a Redis worker as the queue would (host-pid-random);
// the stack picks it so the engine can label containers with it.
func newWorkerID() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "worker"
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// startReaper starts the sweeps of a stack with Redis. Without a worker
// here it uses an engine of its own, when this host's Docker daemon
// answers; with a test engine it does nothing.
func (s *stack) startReaper(f *stackFlags, worker string) {
	lv, ok := s.queue.(workerLiveness)
	if !ok {
		return
	}
	if f.queueLabel == "" {
		s.log.Warn("not reaping dead workers' containers: the queue's deployment id could not be read from Redis")
		return
	}
	r := &reaper{log: s.log, eng: s.engine, alive: lv, queue: f.queueLabel, worker: worker, every: f.reapEvery}
	if r.every <= 0 {
		r.every = 15 * time.Second
	}
	if r.eng == nil {
		if s.worker != nil {
			return
		}
		sf := f.sandboxFlags
		sf.worker, sf.queue = "", ""
		eng, err := sf.engine(s.log, nil)
		if err != nil {
			s.log.Info("not reaping dead workers' containers: no sandbox engine", "err", err)
			return
		}
		r.eng, r.own = eng, true
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	r.wg.Add(1)
	go func() { defer r.wg.Done(); r.run(ctx) }()
	s.reaper = r
}

// close stops the sweeps (and the reaper's own engine).
func (r *reaper) close() {
	r.stop()
	r.wg.Wait()
}

// run sweeps at once and then every interval until ctx ends.
func (r *reaper) run(ctx context.Context) {
	if r.own {
		defer func() {
			c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = r.eng.Close(c)
		}()
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := r.eng.Ping(pctx)
		cancel()
		if err != nil {
			r.log.Info("not reaping dead workers' containers: no Docker daemon here", "err", err)
			return
		}
	}
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		r.sweep(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweep runs one round. A worker counts as dead once its liveness key was
// missing on every sweep for deadWorkerConfirm; a binding counts as gone
// once it was missing on two sweeps in a row (half an interval apart).
func (r *reaper) sweep(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, r.every+time.Minute)
	defer cancel()
	log := r.log
	if r.own {
		if _, err := r.eng.Reap(ctx); err != nil {
			log.Warn("reap failed", "err", err)
		}
	}
	alive := func(ctx context.Context, w string) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, reaperCallTimeout)
		defer cancel()
		return r.alive.WorkerAlive(ctx, w)
	}
	if _, err := r.eng.ReapDeadWorkers(ctx, r.queue, alive, max(r.every/2, deadWorkerConfirm)); err != nil && ctx.Err() == nil {
		log.Warn("reap dead workers failed", "err", err)
	}
	if r.worker != "" {
		r.eng.ReapUnboundSessions(ctx, r.bound, r.every/2)
	}
}

// bound reports whether session id is still bound to this worker in the
// queue: the queue's binding names this worker.
func (r *reaper) bound(ctx context.Context, _, id string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, reaperCallTimeout)
	defer cancel()
	holder, err := r.alive.SessionHolder(ctx, id)
	if err != nil {
		return false, fmt.Errorf("reaper: %w", err)
	}
	return holder == r.worker, nil
}
