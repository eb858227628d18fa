package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/approvals"
	"github.com/airlock-dev/airlock/internal/jobs"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/queue"
	"github.com/airlock-dev/airlock/sandbox"
)

// stackFlags choose how tool calls reach sandboxes.
type stackFlags struct {
	sandboxFlags
	redis       string
	queueName   string
	concurrency int
	// interactiveReserve is the worker's slots beyond concurrency for
	// interactive and session jobs only (0: none).
	interactiveReserve int
	grace              time.Duration // for in-flight jobs at shutdown (0: the queue's default)
	// approvalTools and requireApproval become the dispatcher's
	// ApprovalTools and Policy.RequireApproval (serve's approval flags).
	approvalTools, requireApproval []string
}

func (f *stackFlags) register(fs *flag.FlagSet, embedded bool, pool int) {
	f.sandboxFlags.register(fs, pool)
	fs.StringVar(&f.redis, "redis", os.Getenv("AIRLOCK_REDIS_URL"), "Redis URL of the job queue (env AIRLOCK_REDIS_URL); empty: in-process queue with embedded workers")
	fs.StringVar(&f.queueName, "queue", envOr("AIRLOCK_QUEUE", "airlock"), "queue name (workers and callers must agree)")
	def := 0
	if embedded {
		def = 2
	}
	fs.IntVar(&f.concurrency, "concurrency", envInt("AIRLOCK_CONCURRENCY", def), "sandbox jobs run at once by this process's worker (0: none, with --redis)")
	f.interactiveReserve = envInt(reserveEnv, 1)
	if !embedded { // a one-call command has no batch to make room beside
		registerReserve(fs, &f.interactiveReserve)
	}
}

// reserveEnv is the environment fallback of --interactive-reserve.
const reserveEnv = "AIRLOCK_INTERACTIVE_RESERVE"

// registerReserve defines --interactive-reserve on fs.
func registerReserve(fs *flag.FlagSet, v *int) {
	fs.IntVar(v, "interactive-reserve", envInt(reserveEnv, 1),
		"worker slots on top of --concurrency that only interactive and session jobs use, so a call starts at once while batch items fill the others (0: none; env "+reserveEnv+")")
}

// checkReserve reports a negative --interactive-reserve.
func checkReserve(n int) error {
	if n < 0 {
		return errors.New("--interactive-reserve must be at least 0")
	}
	return nil
}

// queueReserve is WorkerConfig.InteractiveReserve for n slots (the queue
// reads 0 as its default and a negative value as none).
func queueReserve(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// stack is the object graph every command that runs tools builds:
// dispatcher → jobs client → queue → worker → sandbox engine, and the
// approval stores of the dispatcher and the agent.
type stack struct {
	log      *slog.Logger
	metrics  *prometheus.Registry
	engine   *sandbox.Engine // nil when this process runs no worker (or a test engine)
	worker   stackEngine     // the engine the worker runs jobs on; nil without a worker
	queue    queue.Queue
	client   *jobs.Client
	disp     *dispatcher.Dispatcher
	rdb      *redis.Client // nil without --redis
	agentApr approvals.Store
	workerWG sync.WaitGroup
	stopWork context.CancelFunc
	reaper   *reaper // with Redis: dead workers' containers, unbound sessions
}

// stackEngine is what the stack needs of a sandbox engine.
type stackEngine interface {
	jobs.Engine
	Start(ctx context.Context) error
	Close(ctx context.Context) error
}

// engineFactory builds the worker's engine; tests pass a fake.
type engineFactory func(log *slog.Logger, reg prometheus.Registerer) (stackEngine, error)

// buildStack wires the graph on the real sandbox engine. Without Redis the
// queue is in-process and a worker always runs here; with Redis a worker
// runs here only when concurrency > 0, and pending approvals (the
// dispatcher's held calls and the agent's) live in Redis next to the queue.
func buildStack(ctx context.Context, f *stackFlags, log *slog.Logger) (*stack, error) {
	return buildStackWith(ctx, f, log, func(log *slog.Logger, reg prometheus.Registerer) (stackEngine, error) { return f.engine(log, reg) })
}

// buildStackWith is buildStack with the engine from newEngine.
func buildStackWith(ctx context.Context, f *stackFlags, log *slog.Logger, newEngine engineFactory) (*stack, error) {
	s := &stack{log: log, metrics: prometheus.NewRegistry()}
	s.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	dcfg := dispatcher.DefaultConfig()
	dcfg.ApprovalTools, dcfg.Policy.RequireApproval = f.approvalTools, f.requireApproval
	s.agentApr = approvals.NewMemory(nil)
	if f.redis != "" {
		rdb, err := queue.NewRedisClient(f.redis, 2*time.Second)
		if err != nil {
			return nil, fmt.Errorf("approvals: %w", err)
		}
		s.rdb = rdb
		dcfg.Approvals = approvals.NewRedis(rdb, "airlock:{"+f.queueName+":approvals}", 0)
		s.agentApr = approvals.NewRedis(rdb, "airlock:{"+f.queueName+":agent}", 0)
	}
	q, err := queue.Open(queue.Config{RedisURL: f.redis, Name: f.queueName}, queue.Deps{Logger: log, Registerer: s.metrics})
	if err != nil {
		s.closeRedis()
		return nil, fmt.Errorf("queue: %w", err)
	}
	s.queue = q
	conc := f.concurrency
	if f.redis == "" && conc <= 0 {
		conc = 2
	}
	// A Redis worker's id is picked here, so its containers carry it
	// (airlock.worker) and reapers anywhere can tell when it is dead.
	workerID := ""
	if conc > 0 && f.redis != "" {
		workerID = newWorkerID()
		f.worker, f.queue = workerID, f.queueName
	}
	if conc > 0 {
		eng, err := newEngine(log, s.metrics)
		if err != nil {
			s.close()
			return nil, err
		}
		if err := eng.Start(ctx); err != nil {
			s.close()
			return nil, err
		}
		s.worker = eng
		s.engine, _ = eng.(*sandbox.Engine)
		w, err := q.NewWorker(queue.WorkerConfig{
			ID: workerID, Concurrency: conc, InteractiveReserve: queueReserve(f.interactiveReserve), Grace: f.grace,
		}, jobs.NewRunner(eng))
		if err != nil {
			s.close()
			return nil, fmt.Errorf("worker: %w", err)
		}
		wctx, cancel := context.WithCancel(context.Background())
		s.stopWork = cancel
		s.workerWG.Add(1)
		go func() {
			defer s.workerWG.Done()
			if err := w.Run(wctx); err != nil {
				log.Error("worker stopped", "err", err)
			}
		}()
	}
	if f.redis != "" {
		s.startReaper(f, workerID)
	}
	s.client = jobs.NewClient(q, jobs.ClientConfig{DefaultTimeout: sandbox.DefaultConfig().Defaults.Timeout})
	dcfg.Ceiling = sandbox.DefaultConfig().Defaults // a call's limits only lower the sandbox defaults
	s.disp = dispatcher.New(dcfg, s.client, log)
	return s, nil
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
	s.closeRedis()
}

// closeRedis closes the approval stores' Redis client, if any.
func (s *stack) closeRedis() {
	if s.rdb != nil {
		_ = s.rdb.Close()
	}
}

// agentTools adapts the dispatcher to the agent's Tools interface.
type agentTools struct {
	*dispatcher.Dispatcher
	// keys, when set, adds each owner's keys-file approval settings to the
	// calls of its runs.
	keys *keys.Set
}

// Run runs call with its owner's approval_tools and require_approval.
func (t agentTools) Run(ctx context.Context, call dispatcher.Call) dispatcher.Result {
	if p := t.keys.Policy(call.Owner); p != nil {
		call.ApprovalTools = append(call.ApprovalTools, p.ApprovalTools...)
		call.RequireApproval = append(call.RequireApproval, p.RequireApproval...)
	}
	return t.Dispatcher.Run(ctx, call)
}

// OpenAITools is the registry's OpenAI tool list.
func (t agentTools) OpenAITools() []openai.ChatCompletionToolUnionParam {
	return t.Registry().OpenAITools()
}

// SystemPrompt is the registry's generated tool description.
func (t agentTools) SystemPrompt() string { return t.Registry().SystemPrompt() }

// apiDispatcher adapts the dispatcher to the API's Dispatcher interface.
type apiDispatcher struct{ *dispatcher.Dispatcher }

// ToolsJSON is the registry as an OpenAI tools array.
func (d apiDispatcher) ToolsJSON() []map[string]any { return d.Registry().OpenAIToolsJSON() }

// apiSessions adapts the jobs client to the API's Sessions interface.
type apiSessions struct{ *jobs.Client }

// Open opens a session on some worker.
func (s apiSessions) Open(ctx context.Context, owner string, limits core.Limits, background bool) (string, error) {
	return s.OpenSessionOpts(ctx, owner, limits, background)
}

// Close destroys a session.
func (s apiSessions) Close(ctx context.Context, owner, id string) error {
	return s.CloseSession(ctx, owner, id)
}
