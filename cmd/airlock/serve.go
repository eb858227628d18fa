package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/api"
	"github.com/airlock-dev/airlock/batch"
	"github.com/airlock-dev/airlock/internal/mcpserver"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/state"
)

// runServe implements `airlock serve`: the HTTP API and web UI, the
// dispatcher, the agent run manager and (without --redis, or with
// --concurrency) a worker pool in this process.
func runServe(args []string, stdout, stderr io.Writer) int {
	cmd := command{"serve", stderr}
	o, code, ok := parseServeFlags(args, os.Getenv, stderr)
	if !ok {
		return code
	}
	log := infoLogger(stderr, o.verbose)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The state store first: the embedded worker keeps session snapshots
	// and call logs in it (issue 30).
	srdb, err := stateRedis(o.stack.redis)
	if err != nil {
		return cmd.fail(1, err)
	}
	store, err := openState(srdb, o.dataDir)
	if err != nil {
		return cmd.fail(1, err)
	}
	defer store.Close()
	o.stack.snapState = store
	st, err := buildStack(ctx, &o.stack, log)
	if err != nil {
		return cmd.fail(1, err)
	}
	defer st.close()
	envs, err := st.environments(store, &o.stack)
	if err != nil {
		return cmd.fail(1, err)
	}
	defer envs.Close()
	// Runs live in the state store: with a shared store (--redis) any
	// replica serves them and takes over those whose replica died; the
	// embedded store keeps them across a restart.
	runs := st.runManager(agent.ManagerConfig{Loop: agent.Config{MaxSteps: o.maxSteps}, Caller: "api", Store: store}, o.provider, o.api.Keys)
	defer closeWithin(runs.Close)
	mcpSrv, err := mcpserver.New(mcpserver.Config{IdleTimeout: o.api.SessionIdleTTL, Environments: keyEnvironments(o.api.Keys, o.api.InsecureLocal)}, mcpserver.Deps{Dispatcher: st.disp, Executor: st.client, Logger: log, Environments: st.envs,
		Snapshots: &mcpserver.SnapshotOptions{Snapshotter: st.client, Store: snapshots.New(store, o.stack.snapConfig, nil)},
		Egress:    sessionEgress(o.stack.keys, o.stack.egress.local)})
	if err != nil {
		return cmd.fail(1, err)
	}
	defer closeWithin(mcpSrv.Close)
	srv, err := api.New(o.api, api.Deps{
		Dispatcher:   apiDispatcher{st.disp},
		Sessions:     apiSessions{Client: st.client, egress: sessionEgress(o.stack.keys, o.stack.egress.local)},
		Runs:         runs,
		MCP:          mcpSrv,
		Checks:       st.readinessChecks(store),
		State:        store,
		Batches:      store,
		BatchConfig:  batch.Config{MountInputs: o.batchMount, LeaseTTL: o.batchLease},
		Gatherer:     st.metrics,
		Registerer:   st.metrics,
		Logger:       log,
		Environments: envs,
	})
	if err != nil {
		return cmd.fail(1, err)
	}
	if err := startPprof(ctx, os.Getenv("AIRLOCK_PPROF"), log); err != nil {
		return cmd.fail(1, err)
	}
	logServing(log, o)
	if err := srv.Run(ctx); err != nil {
		return cmd.fail(1, err)
	}
	return 0
}

// runManager assembles the agent's run manager over the stack's
// dispatcher and approval store: the one place it is built. keys, when
// set, add each owner's keys-file policy to its runs' calls.
func (s *stack) runManager(cfg agent.ManagerConfig, provider agent.Provider, ks *keys.Set) *agent.Manager {
	cfg.Pending = s.agentApr
	return agent.NewManager(cfg, agentTools{Dispatcher: s.disp, keys: ks}, provider, s.log)
}

// readinessChecks are serve's /readyz checks: the queue, the state store,
// the Docker daemon of an embedded worker, and live workers on Redis.
func (s *stack) readinessChecks(store state.Store) []api.ReadinessCheck {
	checks := []api.ReadinessCheck{{Name: "queue", Check: s.queue.Ping}, {Name: "state", Check: store.Ping}}
	if s.engine != nil {
		checks = append(checks, api.ReadinessCheck{Name: "docker", Check: s.engine.Ping})
	}
	if wc, ok := s.queue.(interface {
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
	return checks
}

// logServing logs where serve listens and what it runs on.
func logServing(log *slog.Logger, o serveOptions) {
	mode := "in-process queue with an embedded worker"
	if o.stack.redis != "" {
		mode = "Redis queue " + o.stack.queueName
	}
	log.Info("airlock serving", "addr", o.api.Addr, "ui", "http://"+o.api.Addr+"/", "queue", mode,
		"model", o.provider.Model, "model_configured", o.provider.Configured(), "secrets", o.stack.secrets.Len())
}

// closeWithin calls close with a 30 s deadline (a deferred shutdown).
func closeWithin(close func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = close(ctx)
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
	cmd := command{"serve", stderr}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var af apiFlags
	af.register(fs)
	o.stack.register(fs, false, 2)
	var mf modelFlags
	mf.register(fs, "model for agent runs")
	fs.IntVar(&o.maxSteps, "max-steps", agent.DefaultMaxSteps, "model calls with tools before a forced final answer")
	fs.BoolVar(&o.verbose, "v", false, "debug logs")
	fs.BoolVar(&o.batchMount, "batch-mount-inputs", false, "mount batch folder items read-only instead of packing them into an archive unpacked in the sandbox")
	fs.DurationVar(&o.batchLease, "batch-lease", envDuration("AIRLOCK_BATCH_LEASE", 0), "how long a replica's lease on a batch lasts unrenewed: another replica resumes the batch of a replica gone that long (0: the default, 15s; env AIRLOCK_BATCH_LEASE)")
	fs.StringVar(&o.dataDir, "data-dir", state.DefaultDataDir(), "directory of the embedded state store (sessions, artifacts, idempotency keys) used without --redis (env AIRLOCK_DATA_DIR)")
	if code, ok := parseFlags(fs, args); !ok {
		return o, code, false
	}
	fs.Visit(func(fl *flag.Flag) { af.rateSet = af.rateSet || fl.Name == "rate" })
	if err := checkReserve(o.stack.interactiveReserve); err != nil {
		return o, cmd.fail(2, err), false
	}
	cfg, err := af.config()
	if err != nil {
		return o, cmd.fail(2, err), false
	}
	// Without keys (--insecure-local, loopback only) the user is the
	// operator: calls may use up to the server maximum, as in exec.
	o.api, o.stack.keys, o.stack.local = cfg, cfg.Keys, cfg.InsecureLocal
	if o.stack.approvalTools, o.stack.requireApproval, err = af.approvals(); err != nil {
		return o, cmd.fail(2, err), false
	}
	if err := o.stack.loadSecrets(); err != nil {
		return o, cmd.fail(2, err), false
	}
	o.provider = mf.provider(0, getenv)
	return o, 0, true
}
