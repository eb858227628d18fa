package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/jobs"
	"github.com/airlock-dev/airlock/queue"
	"github.com/airlock-dev/airlock/sandbox"
)

// stackFlags choose how tool calls reach sandboxes.
type stackFlags struct {
	sandboxFlags
	redis       string
	queueName   string
	concurrency int
	grace       time.Duration // for in-flight jobs at shutdown (0: the queue's default)
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
}

// stack is the object graph every command that runs tools builds:
// dispatcher → jobs client → queue → worker → sandbox engine.
type stack struct {
	log      *slog.Logger
	metrics  *prometheus.Registry
	engine   *sandbox.Engine // nil when this process runs no worker
	queue    queue.Queue
	client   *jobs.Client
	disp     *dispatcher.Dispatcher
	workerWG sync.WaitGroup
	stopWork context.CancelFunc
}

// buildStack wires the graph. Without Redis the queue is in-process and a
// worker always runs here; with Redis a worker runs here only when
// concurrency > 0.
func buildStack(ctx context.Context, f *stackFlags, log *slog.Logger) (*stack, error) {
	s := &stack{log: log, metrics: prometheus.NewRegistry()}
	s.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	q, err := queue.Open(queue.Config{RedisURL: f.redis, Name: f.queueName}, queue.Deps{Logger: log, Registerer: s.metrics})
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	s.queue = q
	conc := f.concurrency
	if f.redis == "" && conc <= 0 {
		conc = 2
	}
	if conc > 0 {
		eng, err := f.engine(log)
		if err != nil {
			_ = q.Close()
			return nil, err
		}
		if err := eng.Start(ctx); err != nil {
			_ = q.Close()
			return nil, err
		}
		s.engine = eng
		w, err := q.NewWorker(queue.WorkerConfig{Concurrency: conc, Grace: f.grace}, jobs.NewHandler(eng))
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
	s.client = jobs.NewClient(q, jobs.ClientConfig{DefaultTimeout: sandbox.DefaultConfig().Defaults.Timeout})
	dcfg := dispatcher.DefaultConfig()
	dcfg.Ceiling = sandbox.DefaultConfig().Defaults // a call's limits only lower the sandbox defaults
	s.disp = dispatcher.New(dcfg, s.client, log)
	return s, nil
}

// close stops the worker (letting running jobs finish), the engine and the queue.
func (s *stack) close() {
	if s.stopWork != nil {
		s.stopWork()
		s.workerWG.Wait()
	}
	if s.engine != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.engine.Close(ctx); err != nil {
			s.log.Warn("engine close", "err", err)
		}
	}
	_ = s.queue.Close()
}

// agentTools adapts the dispatcher to the agent's Tools interface.
type agentTools struct{ *dispatcher.Dispatcher }

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
