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
	"github.com/airlock-dev/airlock/internal/mcpserver"
)

// runServe implements `airlock serve`: the HTTP API and web UI, the
// dispatcher, the agent run manager and (without --redis, or with
// --concurrency) a worker pool in this process.
func runServe(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var af apiFlags
	var sf stackFlags
	af.register(fs)
	sf.register(fs, false, 2)
	model := fs.String("model", "", "model for agent runs (default $"+agent.EnvModel+")")
	baseURL := fs.String("base-url", "", "OpenAI-compatible base URL (default $"+agent.EnvBaseURL+")")
	keyEnv := fs.String("api-key-env", agent.EnvAPIKey, "environment variable holding the model API key")
	maxSteps := fs.Int("max-steps", agent.DefaultMaxSteps, "model calls with tools before a forced final answer")
	verbose := fs.Bool("v", false, "debug logs")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := af.config()
	if err != nil {
		fmt.Fprintf(stderr, "airlock serve: %v\n", err)
		return 2
	}
	log := logger(stderr, *verbose)
	if !*verbose {
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
	getenv := func(k string) string {
		if k == agent.EnvAPIKey {
			return os.Getenv(*keyEnv)
		}
		return os.Getenv(k)
	}
	provider := agent.ResolveProvider(agent.Provider{BaseURL: *baseURL, Model: *model}, getenv)
	// With --redis, pending approvals live in Redis next to the queue.
	mcfg := agent.ManagerConfig{Loop: agent.Config{MaxSteps: *maxSteps}, Caller: "api", Pending: st.agentApr}
	runs := agent.NewManager(mcfg, agentTools{st.disp}, provider, log)
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = runs.Close(c)
	}()
	checks := []api.ReadinessCheck{{Name: "queue", Check: st.queue.Ping}}
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
		Dispatcher: apiDispatcher{st.disp},
		Sessions:   apiSessions{st.client},
		Runs:       runs,
		MCP:        mcpSrv,
		Checks:     checks,
		Gatherer:   st.metrics,
		Registerer: st.metrics,
		Logger:     log,
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

// runWorker implements `airlock worker`: it takes sandbox jobs from the
// Redis queue and runs them on this host's Docker daemon until SIGTERM,
// then finishes the jobs in flight within the grace period.
func runWorker(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf sandboxFlags
	sf.register(fs, 2)
	redisURL := fs.String("redis", os.Getenv("AIRLOCK_REDIS_URL"), "Redis URL of the job queue (required; env AIRLOCK_REDIS_URL)")
	name := fs.String("queue", envOr("AIRLOCK_QUEUE", "airlock"), "queue name")
	conc := fs.Int("concurrency", envInt("AIRLOCK_CONCURRENCY", 2), "sandbox jobs run at once")
	grace := fs.Duration("grace", 30*time.Second, "on shutdown, how long jobs in flight may take to finish")
	verbose := fs.Bool("v", false, "debug logs")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *redisURL == "" {
		fmt.Fprintln(stderr, "airlock worker: --redis (or AIRLOCK_REDIS_URL) is required; without Redis, `airlock serve` runs its own worker")
		return 2
	}
	if *conc < 1 {
		fmt.Fprintln(stderr, "airlock worker: --concurrency must be at least 1")
		return 2
	}
	log := infoLogger(stderr)
	if *verbose {
		log = logger(stderr, true)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sf2 := stackFlags{sandboxFlags: sf, redis: *redisURL, queueName: *name, concurrency: *conc, grace: *grace}
	st, err := buildStack(ctx, &sf2, log)
	if err != nil {
		fmt.Fprintf(stderr, "airlock worker: %v\n", err)
		return 1
	}
	log.Info("airlock worker running", "queue", *name, "concurrency", *conc)
	<-ctx.Done()
	log.Info("airlock worker stopping: finishing jobs in flight", "grace", *grace)
	st.close()
	return 0
}
