package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/internal/approvals"
	"github.com/airlock-dev/airlock/internal/jobs"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/queue"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/state"
)

// stack is the object graph of a command: queue → worker → sandbox
// engine, and, for the commands that take tool calls, dispatcher → jobs
// client → queue with the approval stores of the dispatcher and the agent.
// Each part is assembled here and nowhere else.
type stack struct {
	log      *slog.Logger
	metrics  *prometheus.Registry
	engine   *sandbox.Engine // nil when this process runs no worker (or a test engine)
	worker   stackEngine     // the engine the worker runs jobs on; nil without a worker
	queue    queue.Queue
	client   *jobs.Client           // nil in `airlock worker`
	disp     *dispatcher.Dispatcher // nil in `airlock worker`
	rdb      *redis.Client          // nil without --redis or in `airlock worker`
	agentApr approvals.Store        // nil in `airlock worker`
	workerWG sync.WaitGroup
	stopWork context.CancelFunc
	reaper   *reaper // with Redis: dead workers' containers, unbound sessions
	envs     *envResolver
}

// stackEngine is what the stack needs of a sandbox engine.
type stackEngine interface {
	jobs.Engine
	Start(ctx context.Context) error
	Close(ctx context.Context) error
}

// engineFactory builds the worker's engine; tests pass a fake.
type engineFactory func(log *slog.Logger, reg prometheus.Registerer) (stackEngine, error)

// dockerEngine is the engineFactory of f's real sandbox engine.
func (f *stackFlags) dockerEngine() engineFactory {
	return func(log *slog.Logger, reg prometheus.Registerer) (stackEngine, error) { return f.engine(log, reg) }
}

// buildStack wires the graph of a command that takes tool calls on the
// real sandbox engine. Without Redis the queue is in-process and a worker
// always runs here; with Redis a worker runs here only when concurrency >
// 0, and pending approvals (the dispatcher's held calls and the agent's)
// live in Redis next to the queue.
func buildStack(ctx context.Context, f *stackFlags, log *slog.Logger) (*stack, error) {
	return buildStackWith(ctx, f, log, f.dockerEngine())
}

// buildStackWith is buildStack with the engine from newEngine.
func buildStackWith(ctx context.Context, f *stackFlags, log *slog.Logger, newEngine engineFactory) (*stack, error) {
	s := newStack(log)
	s.agentApr = approvals.NewMemory(nil)
	var held approvals.Store
	if f.redis != "" {
		rdb, err := queue.NewRedisClient(f.redis, 2*time.Second)
		if err != nil {
			return nil, fmt.Errorf("approvals: %w", err)
		}
		s.rdb = rdb
		held = approvals.NewRedis(rdb, "airlock:{"+f.queueName+":approvals}", 0)
		s.agentApr = approvals.NewRedis(rdb, "airlock:{"+f.queueName+":agent}", 0)
	}
	conc := f.concurrency
	if f.redis == "" && conc <= 0 {
		conc = 2
	}
	if err := s.run(ctx, f, conc, newEngine); err != nil {
		return nil, err
	}
	sb := sandbox.DefaultConfig()
	s.client = jobs.NewClient(s.queue, jobs.ClientConfig{DefaultTimeout: sb.Defaults.Timeout, SessionTimeout: sb.Max.Timeout})
	if f.snapState != nil {
		s.client.SetResumes(f.resumes())
	}
	dcfg := f.dispatcherConfig(held)
	fetcher, err := f.egress.fetcher(log, s.metrics)
	if err != nil {
		s.close()
		return nil, err
	}
	dcfg.Fetcher = fetcher
	if f.keys == nil && f.egress.local != "" {
		pol, err := f.egress.localPolicy()
		if err != nil {
			s.close()
			return nil, err
		}
		dcfg.Egress = func(dispatcher.Call) (egress.Policy, error) { return pol, nil }
	}
	dcfg.Environments = s.envs
	s.disp = dispatcher.New(dcfg, s.client, log)
	return s, nil
}

// buildWorker wires `airlock worker`: the Redis queue, a worker on the
// real sandbox engine and the reaper; no dispatcher takes calls here.
func buildWorker(ctx context.Context, f *stackFlags, log *slog.Logger) (*stack, error) {
	return buildWorkerWith(ctx, f, log, f.dockerEngine())
}

// buildWorkerWith is buildWorker with the engine from newEngine.
func buildWorkerWith(ctx context.Context, f *stackFlags, log *slog.Logger, newEngine engineFactory) (*stack, error) {
	s := newStack(log)
	if f.redis != "" && f.snapState == nil { // session snapshots and call logs, in serve's state store
		rdb, err := queue.NewRedisClient(f.redis, 2*time.Second)
		if err != nil {
			return nil, fmt.Errorf("state: %w", err)
		}
		s.rdb = rdb
		f.snapState = state.NewRedis(rdb, stateKeyPrefix)
	}
	if err := s.run(ctx, f, f.concurrency, newEngine); err != nil {
		return nil, err
	}
	return s, nil
}

// newStack returns an empty stack with its metrics registry.
func newStack(log *slog.Logger) *stack {
	s := &stack{log: log, metrics: prometheus.NewRegistry(), envs: &envResolver{}}
	s.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return s
}

// run opens the queue and, with conc > 0, starts a worker of conc slots on
// the engine newEngine builds; with Redis it also starts the reaper. On an
// error everything started is closed again.
func (s *stack) run(ctx context.Context, f *stackFlags, conc int, newEngine engineFactory) error {
	q, err := queue.Open(queue.Config{RedisURL: f.redis, Name: f.queueName, VisibilityTimeout: f.visibility}, queue.Deps{Logger: s.log, Registerer: s.metrics})
	if err != nil {
		s.close()
		return fmt.Errorf("queue: %w", err)
	}
	s.queue = q
	if f.redis != "" {
		f.queueLabel = s.deploymentLabel(ctx, q, f.queueName)
	}
	// A Redis worker's id is picked here, so its containers carry it
	// (airlock.worker) and reapers anywhere can tell when it is dead; the
	// queue label names its deployment, so another deployment's reaper on
	// the same Docker host never judges them.
	workerID := ""
	if conc > 0 && f.redis != "" {
		workerID = newWorkerID()
		f.worker, f.queue = workerID, cmp.Or(f.queueLabel, f.queueName)
	}
	if conc > 0 {
		if err := s.startWorker(ctx, f, workerID, conc, newEngine); err != nil {
			s.close()
			return err
		}
	}
	if f.redis != "" {
		s.startReaper(f, workerID)
	}
	return nil
}

// startWorker builds and starts the engine and a queue worker on it. With
// --secrets-file the worker's results and live output are redacted before
// they leave it, so the secrets never reach the queue.
func (s *stack) startWorker(ctx context.Context, f *stackFlags, id string, conc int, newEngine engineFactory) error {
	eng, err := newEngine(s.log, s.metrics)
	if err != nil {
		return err
	}
	if err := eng.Start(ctx); err != nil {
		return err
	}
	s.worker = eng
	s.engine, _ = eng.(*sandbox.Engine)
	var run jobs.Engine = eng
	if f.secrets.Len() > 0 {
		run = redactingEngine{Engine: eng, red: dispatcher.NewRedactor(f.secrets.List())}
	}
	var keeper *snapshots.Keeper
	if se, ok := eng.(snapshots.Engine); ok && f.snapState != nil {
		if red, ok := run.(redactingEngine); ok { // the call log keeps what the caller saw
			se = redactingSnapshots{redactingEngine: red, se: se}
		}
		keeper = snapshots.NewKeeper(se, snapshots.New(f.snapState, f.snapConfig, nil), snapshots.NewCallLog(f.snapState), s.log)
		keeper.EnableResume(f.resumeConfig())
		run = keeper
	}
	// The environment holder is outermost: a call or a session opening
	// (a wake too) in an environment this host lacks builds it first.
	run, holder, err := s.envHolder(f, run)
	if err != nil {
		return fmt.Errorf("worker: environments: %w", err)
	}
	wcfg := queue.WorkerConfig{ID: id, Concurrency: conc, InteractiveReserve: queueReserve(f.interactiveReserve), Grace: f.grace}
	if holder != nil {
		wcfg.Environments = holder.Held
	}
	if keeper != nil {
		wcfg.OnStop = func() { s.saveSessions(keeper, f.grace) }
	}
	w, err := s.queue.NewWorker(wcfg, jobs.NewRunner(run))
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	advertiseOnBuild(holder, w)
	wctx, cancel := context.WithCancel(context.Background())
	s.stopWork = cancel
	if keeper != nil {
		s.workerWG.Go(func() { keeper.RunHibernator(wctx) })
	}
	s.workerWG.Add(1)
	go func() {
		defer s.workerWG.Done()
		if err := w.Run(wctx); err != nil {
			s.log.Error("worker stopped", "err", err)
		}
	}()
	return nil
}

// dispatcherConfig is the dispatcher's configuration for the flags: the
// approval settings and store, the secrets, and the ceiling of calls
// (serve: the server defaults, raised per key by the keys file; a local
// command: the server maximum).
func (f *stackFlags) dispatcherConfig(held approvals.Store) dispatcher.Config {
	cfg := dispatcher.DefaultConfig()
	cfg.ApprovalTools, cfg.Policy.RequireApproval, cfg.Approvals = f.approvalTools, f.requireApproval, held
	cfg.Secrets = f.secrets.List()
	if f.keys != nil {
		cfg.KeySecrets = f.keys.Secrets
		ks := f.keys
		// The key's egress; a one-shot call's environment narrows it
		// further once resolved (dispatcher.narrowEgress), a session's
		// when it opens (apiSessions.OpenIn).
		cfg.Egress = func(call dispatcher.Call) (egress.Policy, error) {
			return keys.EgressFor(ks.Policy(call.Owner), nil)
		}
	}
	cfg.Ceiling = f.ceiling()
	return cfg
}

// ceiling is the most a call may ask for before a key's policy: the
// server defaults for serve, the server maximum for a local command.
func (f *stackFlags) ceiling() core.Limits {
	if f.local {
		return sandbox.DefaultConfig().Max
	}
	return sandbox.DefaultConfig().Defaults
}

// close stops the reaper, the worker (letting running jobs finish), the
// engine, the queue and the Redis client of the approval stores.
func (s *stack) close() {
	if s.reaper != nil {
		s.reaper.close()
	}
	if s.stopWork != nil {
		s.stopWork()
		s.workerWG.Wait()
	}
	if s.worker != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.worker.Close(ctx); err != nil {
			s.log.Warn("engine close", "err", err)
		}
	}
	if s.queue != nil {
		_ = s.queue.Close()
	}
	if s.rdb != nil {
		_ = s.rdb.Close()
	}
}
