package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/state"
	"os"
	"time"

	"github.com/airlock-dev/airlock/internal/secrets"
	"github.com/airlock-dev/airlock/keys"
)

// registerQueue adds --redis and --queue, which name the job queue, to
// fs; redisUse says what --redis means to this command.
func registerQueue(fs *flag.FlagSet, redis, queueName *string, redisUse string) {
	fs.StringVar(redis, "redis", os.Getenv("AIRLOCK_REDIS_URL"), "Redis URL of the job queue (env AIRLOCK_REDIS_URL); "+redisUse)
	fs.StringVar(queueName, "queue", envOr("AIRLOCK_QUEUE", "airlock"), "queue name, the same for workers and callers (env AIRLOCK_QUEUE)")
}

// registerServer adds --server and --key, which name a running `airlock
// serve` and the API key for it, to fs; def is --server's default and use
// says what this command does with it.
func registerServer(fs *flag.FlagSet, server, key *string, def, use string) {
	fs.StringVar(server, "server", envOr("AIRLOCK_SERVER", def), "URL of a running `airlock serve` "+use+" (env AIRLOCK_SERVER)")
	*key = os.Getenv("AIRLOCK_API_KEY")
	fs.Var(&secretFlag{p: key}, "key", "API key for --server (default: env AIRLOCK_API_KEY)")
}

// registerMount adds --mount, a host folder the tools see read-only at
// /workspace, to fs.
func registerMount(fs *flag.FlagSet, mount *string) {
	fs.StringVar(mount, "mount", "", "host folder mounted read-only at /workspace for the tools (not with --server)")
}

// stackFlags choose how tool calls reach sandboxes, and what the
// dispatcher redacts and holds for approval.
type stackFlags struct {
	sandboxFlags
	redis     string
	queueName string
	// queueLabel is the containers' queue label with Redis: the queue name
	// and the deployment id its Redis holds (deployment.go); "" when the
	// id could not be read (then no dead-worker reaping here).
	queueLabel  string
	concurrency int
	// interactiveReserve is the worker's slots beyond concurrency for
	// interactive and session jobs only (0: none).
	interactiveReserve int
	grace              time.Duration // for in-flight jobs at shutdown (0: the queue's default)
	// visibility is the Redis queue's VisibilityTimeout (and so its
	// LivenessTTL); 0 keeps the queue's default.
	visibility time.Duration
	// local marks a command run by the operator on this host (exec,
	// session, mcp, run, and serve --insecure-local): its calls may use up
	// to the server maximum, where serve's with keys are bounded by the
	// server defaults and the keys' policies.
	local bool
	// secretsFile names the --secrets-file; secrets are its values,
	// redacted from every result (loadSecrets reads them).
	secretsFile string
	secrets     secrets.Values
	// approvalTools and requireApproval become the dispatcher's
	// ApprovalTools and Policy.RequireApproval (serve's approval flags).
	approvalTools, requireApproval []string
	// keys are serve's API keys: each key's secrets_file is redacted from
	// its own results, and its policy bounds its agent runs' calls.
	keys *keys.Set
	// snapState is the state store a worker keeps session snapshots and
	// call logs in (serve's store; a Redis worker's); nil: no snapshots.
	snapState  state.Store
	snapConfig snapshots.Config
	// envNamespace is a Redis worker's --environment-namespace: the
	// namespace of the environment images it builds (environments/hosts).
	envNamespace string
}

// register adds the flags of a command that takes tool calls: serve
// (local false), or a command the operator runs here (exec, session, mcp,
// run: local, with an embedded worker by default). pool is the default
// warm-pool size.
func (f *stackFlags) register(fs *flag.FlagSet, local bool, pool int) {
	f.local = local
	f.sandboxFlags.register(fs, pool)
	registerQueue(fs, &f.redis, &f.queueName, "empty: an in-process queue with an embedded worker")
	def := 0
	if local {
		def = 2
	}
	f.registerConcurrency(fs, def)
	f.interactiveReserve = envInt(reserveEnv, 1)
	if !local { // a one-call command has no batch to make room beside
		registerReserve(fs, &f.interactiveReserve)
		registerVisibility(fs, &f.visibility)
		f.registerSnapshots(fs)
		f.registerHibernate(fs)
	}
	f.registerSecretsFile(fs)
}

// registerWorker adds the flags of `airlock worker`.
func (f *stackFlags) registerWorker(fs *flag.FlagSet) {
	f.sandboxFlags.register(fs, 2)
	registerQueue(fs, &f.redis, &f.queueName, "required")
	f.registerConcurrency(fs, 2)
	registerReserve(fs, &f.interactiveReserve)
	registerVisibility(fs, &f.visibility)
	fs.DurationVar(&f.grace, "grace", 30*time.Second, "on shutdown, how long jobs in flight may take to finish")
	f.registerSecretsFile(fs)
	f.registerSnapshots(fs)
	registerEnvNamespace(fs, &f.envNamespace)
	f.registerHibernate(fs)
}

// registerConcurrency adds --concurrency with default def.
func (f *stackFlags) registerConcurrency(fs *flag.FlagSet, def int) {
	fs.IntVar(&f.concurrency, "concurrency", envInt("AIRLOCK_CONCURRENCY", def),
		"sandbox jobs this process's worker runs at once (0 with --redis: no worker here; env AIRLOCK_CONCURRENCY)")
}

// registerSecretsFile adds --secrets-file.
func (f *stackFlags) registerSecretsFile(fs *flag.FlagSet) {
	fs.StringVar(&f.secretsFile, "secrets-file", os.Getenv(secretsFileEnv),
		"file of secret values, one per line, redacted as [REDACTED] from every result (env "+secretsFileEnv+"); the values are never printed or logged")
}

// secretsFileEnv is the environment fallback of --secrets-file.
const secretsFileEnv = "AIRLOCK_SECRETS_FILE"

// loadSecrets reads --secrets-file, if set.
func (f *stackFlags) loadSecrets() error {
	if f.secretsFile == "" {
		return nil
	}
	v, err := secrets.ReadFile(f.secretsFile)
	if err != nil {
		return fmt.Errorf("--secrets-file: %w", err)
	}
	f.secrets = v
	return nil
}

// checkWorker reports what makes the flags unusable for `airlock worker`.
func (f *stackFlags) checkWorker() error {
	switch {
	case f.redis == "":
		return errors.New("--redis (or AIRLOCK_REDIS_URL) is required; without Redis, `airlock serve` runs its own worker")
	case f.concurrency < 1:
		return errors.New("--concurrency must be at least 1")
	}
	return checkReserve(f.interactiveReserve)
}

// reserveEnv is the environment fallback of --interactive-reserve.
const reserveEnv = "AIRLOCK_INTERACTIVE_RESERVE"

// registerReserve defines --interactive-reserve on fs.
func registerReserve(fs *flag.FlagSet, v *int) {
	fs.IntVar(v, "interactive-reserve", envInt(reserveEnv, 1),
		"worker slots on top of --concurrency that only interactive and session jobs use, so a call starts at once while batch items fill the others (0: none; env "+reserveEnv+")")
}

// registerVisibility defines --visibility-timeout on fs.
func registerVisibility(fs *flag.FlagSet, v *time.Duration) {
	fs.DurationVar(v, "visibility-timeout", envDuration("AIRLOCK_VISIBILITY_TIMEOUT", 0),
		"with --redis: how long a running job may go without its worker's heartbeat before another worker takes it over, and the lifetime of a worker's liveness key (0: the default, 30s; env AIRLOCK_VISIBILITY_TIMEOUT)")
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
