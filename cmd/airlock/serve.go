package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/api"
	"github.com/airlock-dev/airlock/batch"
	"github.com/airlock-dev/airlock/internal/mcpserver"
	"github.com/airlock-dev/airlock/state"
)

// runServe implements `airlock serve`: the HTTP API and web UI, the
// dispatcher, the agent run manager and (without --redis, or with
// --concurrency) a worker pool in this process.
func runServe(args []string, stdout, stderr io.Writer) int {
	o, code, ok := parseServeFlags(args, os.Getenv, stderr)
	if !ok {
		return code
	}
	cfg, sf := o.api, o.stack
	log := logger(stderr, o.verbose)
	if !o.verbose {
		log = infoLogger(stderr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := buildStack(ctx, &sf, log)
	if err != nil {
		fmt.Fprintf(stderr, "airlock serve: %v\n", err)
		return 1
	}
	defer st.close()
	store, err := openState(st.rdb, o.dataDir)
	if err != nil {
		fmt.Fprintf(stderr, "airlock serve: %v\n", err)
		return 1
	}
	defer store.Close()
	provider := o.provider
	// With --redis, pending approvals live in Redis next to the queue.
	// Runs live in the state store: with a shared store (--redis) any
	// replica serves them and takes over those whose replica died; the
	// embedded store keeps them across a restart.
	mcfg := agent.ManagerConfig{Loop: agent.Config{MaxSteps: o.maxSteps}, Caller: "api", Pending: st.agentApr,
		Store: store}
	runs := agent.NewManager(mcfg, agentTools{Dispatcher: st.disp, keys: cfg.Keys}, provider, log)
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = runs.Close(c)
	}()
	checks := []api.ReadinessCheck{{Name: "queue", Check: st.queue.Ping}, {Name: "state", Check: store.Ping}}
	if st.engine != nil {
		checks = append(checks, api.ReadinessCheck{Name: "docker", Check: st.engine.Ping})
	}
	if wc, ok := st.queue.(interface {
		LiveWorkers(context.Context) (int, error)
	}); ok {
		checks = append(checks, api.ReadinessCheck{Name: "workers", Check: func(ctx context.Context) error {
			n, err := wc.LiveWorkers(ctx)
			if err == nil && n == 0 {
				err = errors.New("no live worker on the queue")
			}
			return err
		}})
	}
	mcpSrv, err := mcpserver.New(mcpserver.Config{IdleTimeout: cfg.SessionIdleTTL}, mcpserver.Deps{Dispatcher: st.disp, Executor: st.client, Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "airlock serve: %v\n", err)
		return 1
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = mcpSrv.Close(c)
	}()
	srv, err := api.New(cfg, api.Deps{
		Dispatcher:  apiDispatcher{st.disp},
		Sessions:    apiSessions{st.client},
		Runs:        runs,
		MCP:         mcpSrv,
		Checks:      checks,
		State:       store,
		Batches:     store,
		BatchConfig: batch.Config{MountInputs: o.batchMount, LeaseTTL: o.batchLease},
		Gatherer:    st.metrics,
		Registerer:  st.metrics,
		Logger:      log,
	})
	if err != nil {
		fmt.Fprintf(stderr, "airlock serve: %v\n", err)
		return 1
	}
	mode := "in-process queue with an embedded worker"
	if sf.redis != "" {
		mode = "Redis queue " + sf.queueName
	}
	log.Info("airlock serving", "addr", cfg.Addr, "ui", "http://"+cfg.Addr+"/", "queue", mode, "model", provider.Model, "model_configured", provider.Configured())
	if err := srv.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "airlock serve: %v\n", err)
		return 1
	}
	return 0
}

// serveOptions are the parsed flags of `airlock serve`.
type serveOptions struct {
	api      api.Config
	stack    stackFlags
	provider agent.Provider
	maxSteps int
	verbose  bool
	// dataDir holds the embedded state store (without --redis).
	dataDir string
	// batchMount mounts batch folder items instead of packing them.
	batchMount bool
	// batchLease is how long a replica's lease on a batch lasts without
	// renewal (0: batch's default).
	batchLease time.Duration
}

// parseServeFlags parses the flags of `airlock serve`, with environment
// fallbacks read through getenv for the model and os.Getenv for the
// rest. ok false means stop with exit code code (the reason is printed).
func parseServeFlags(args []string, getenv func(string) string, stderr io.Writer) (o serveOptions, code int, ok bool) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var af apiFlags
	af.register(fs)
	o.stack.register(fs, false, 2)
	model := fs.String("model", "", "model for agent runs (default $"+agent.EnvModel+")")
	baseURL := fs.String("base-url", "", "OpenAI-compatible base URL (default $"+agent.EnvBaseURL+")")
	keyEnv := fs.String("api-key-env", agent.EnvAPIKey, "environment variable holding the model API key")
	fs.IntVar(&o.maxSteps, "max-steps", agent.DefaultMaxSteps, "model calls with tools before a forced final answer")
	fs.BoolVar(&o.verbose, "v", false, "debug logs")
	fs.BoolVar(&o.batchMount, "batch-mount-inputs", false, "mount batch folder items read-only instead of packing them into an archive unpacked in the sandbox")
	fs.DurationVar(&o.batchLease, "batch-lease", envDuration("AIRLOCK_BATCH_LEASE", 0), "how long a replica's lease on a batch lasts unrenewed: another replica resumes the batch of a replica gone that long (0: the default, 15s; env AIRLOCK_BATCH_LEASE)")
	fs.StringVar(&o.dataDir, "data-dir", state.DefaultDataDir(), "directory of the embedded state store (sessions, artifacts, idempotency keys) used without --redis (env AIRLOCK_DATA_DIR)")
	if code, ok := parseFlags(fs, args); !ok {
		return o, code, false
	}
	if err := checkReserve(o.stack.interactiveReserve); err != nil {
		fmt.Fprintf(stderr, "airlock serve: %v\n", err)
		return o, 2, false
	}
	cfg, err := af.config()
	if err != nil {
		fmt.Fprintf(stderr, "airlock serve: %v\n", err)
		return o, 2, false
	}
	o.api = cfg
	if o.stack.approvalTools, o.stack.requireApproval, err = af.approvals(); err != nil {
		fmt.Fprintf(stderr, "airlock serve: %v\n", err)
		return o, 2, false
	}
	o.provider = resolveProvider(*model, *baseURL, *keyEnv, 0, getenv)
	return o, 0, true
}

// runWorker implements `airlock worker`: it takes sandbox jobs from the
// Redis queue and runs them on this host's Docker daemon until SIGTERM,
// then finishes the jobs in flight within the grace period.
func runWorker(args []string, stdout, stderr io.Writer) int {
	sf2, verbose, code, ok := parseWorkerFlags(args, stderr)
	if !ok {
		return code
	}
	log := infoLogger(stderr)
	if verbose {
		log = logger(stderr, true)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := buildStack(ctx, &sf2, log)
	if err != nil {
		fmt.Fprintf(stderr, "airlock worker: %v\n", err)
		return 1
	}
	log.Info("airlock worker running", "queue", sf2.queueName, "concurrency", sf2.concurrency, "interactive_reserve", sf2.interactiveReserve)
	<-ctx.Done()
	log.Info("airlock worker stopping: finishing jobs in flight", "grace", sf2.grace)
	st.close()
	return 0
}

// parseWorkerFlags parses the flags of `airlock worker` (environment
// fallbacks included) into the stack they build. ok false means stop with
// exit code code (the reason is printed).
func parseWorkerFlags(args []string, stderr io.Writer) (sf stackFlags, verbose bool, code int, ok bool) {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf.sandboxFlags.register(fs, 2)
	fs.StringVar(&sf.redis, "redis", os.Getenv("AIRLOCK_REDIS_URL"), "Redis URL of the job queue (required; env AIRLOCK_REDIS_URL)")
	fs.StringVar(&sf.queueName, "queue", envOr("AIRLOCK_QUEUE", "airlock"), "queue name")
	fs.IntVar(&sf.concurrency, "concurrency", envInt("AIRLOCK_CONCURRENCY", 2), "sandbox jobs run at once")
	registerReserve(fs, &sf.interactiveReserve)
	registerVisibility(fs, &sf.visibility)
	fs.DurationVar(&sf.grace, "grace", 30*time.Second, "on shutdown, how long jobs in flight may take to finish")
	fs.BoolVar(&verbose, "v", false, "debug logs")
	if code, ok := parseFlags(fs, args); !ok {
		return sf, verbose, code, false
	}
	if sf.redis == "" {
		fmt.Fprintln(stderr, "airlock worker: --redis (or AIRLOCK_REDIS_URL) is required; without Redis, `airlock serve` runs its own worker")
		return sf, verbose, 2, false
	}
	if sf.concurrency < 1 {
		fmt.Fprintln(stderr, "airlock worker: --concurrency must be at least 1")
		return sf, verbose, 2, false
	}
	if err := checkReserve(sf.interactiveReserve); err != nil {
		fmt.Fprintf(stderr, "airlock worker: %v\n", err)
		return sf, verbose, 2, false
	}
	return sf, verbose, 0, true
}
