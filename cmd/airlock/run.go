package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/wire"
)

// runAgentOwner owns the CLI's runs.
const runAgentOwner = "cli"

// modelFlags choose the model of agent runs: --model, --base-url and
// --api-key-env, with the environment behind them.
type modelFlags struct {
	model, baseURL, keyEnv string
}

// register adds the model flags to fs; what says what the model is for.
func (f *modelFlags) register(fs *flag.FlagSet, what string) {
	fs.StringVar(&f.model, "model", "", what+" (default $"+agent.EnvModel+")")
	fs.StringVar(&f.baseURL, "base-url", "", "OpenAI-compatible base URL, e.g. http://localhost:11434/v1 (default $"+agent.EnvBaseURL+")")
	fs.StringVar(&f.keyEnv, "api-key-env", agent.EnvAPIKey, "environment variable holding the model API key")
}

// provider fills the model flags from the environment (getenv); the API
// key is read from --api-key-env, and an explicit --api-key-env never
// falls back to another variable. timeout bounds one model request.
func (f *modelFlags) provider(timeout time.Duration, getenv func(string) string) agent.Provider {
	env := func(k string) string {
		if k == agent.EnvAPIKey {
			return getenv(f.keyEnv)
		}
		return getenv(k)
	}
	return agent.ResolveProvider(agent.Provider{BaseURL: f.baseURL, Model: f.model, Timeout: timeout}, env)
}

// runOptions are the parsed flags of `airlock run`.
type runOptions struct {
	environment string // --environment of the run's one-shot calls
	goal        string
	provider    agent.Provider
	stack       stackFlags
	mount       string
	maxSteps    int
	asJSON      bool
	stream      bool
	budget      time.Duration
	verbose     bool
	reqTimeout  time.Duration
}

// parseRunFlags parses the flags of `airlock run` and resolves the model
// provider with getenv. ok false means stop with exit code code (usage
// and errors already printed to stderr).
func parseRunFlags(args []string, getenv func(string) string, stderr io.Writer) (o runOptions, code int, ok bool) {
	cmd := command{"run", stderr}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var mf modelFlags
	mf.register(fs, "model name")
	o.stack.register(fs, true, 0)
	registerMount(fs, &o.mount)
	registerEnvironment(fs, &o.environment)
	fs.IntVar(&o.maxSteps, "max-steps", agent.DefaultMaxSteps, "model calls with tools before a forced final answer")
	fs.BoolVar(&o.asJSON, "json", false, "print events as JSON lines")
	fs.BoolVar(&o.stream, "stream", false, "stream model responses (server-sent events)")
	fs.DurationVar(&o.budget, "timeout", 0, "wall-clock budget for the whole run (0: none)")
	fs.DurationVar(&o.reqTimeout, "request-timeout", agent.DefaultRequestTimeout, "timeout of one model request (raise it for slow local models)")
	fs.BoolVar(&o.verbose, "v", false, "log to stderr")
	if code, ok := parseFlags(fs, args); !ok {
		return o, code, false
	}
	o.goal = strings.TrimSpace(strings.Join(fs.Args(), " "))
	if o.goal == "" {
		fmt.Fprintln(stderr, `usage: airlock run [--model M] [--base-url U] [--api-key-env VAR] [--mount DIR] [--max-steps N] [--json] [--stream] "goal"`)
		return o, 2, false
	}
	o.provider = mf.provider(o.reqTimeout, getenv)
	if !o.provider.Configured() {
		return o, cmd.failf(2, "no model configured: pass --model and --base-url (or set %s and %s)", agent.EnvModel, agent.EnvBaseURL), false
	}
	if o.mount != "" {
		abs, err := mountFolder(o.mount)
		if err != nil {
			return o, cmd.fail(2, err), false
		}
		o.mount = abs
	}
	if err := o.stack.loadSecrets(); err != nil {
		return o, cmd.fail(2, err), false
	}
	return o, 0, true
}

// mountFolder resolves a --mount folder to an absolute path that exists.
func mountFolder(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("--mount: %w", err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "", fmt.Errorf("--mount %s is not a folder", abs)
	}
	return abs, nil
}

// runAgentCmd implements `airlock run [--model M] [--base-url U]
// [--api-key-env VAR] [--mount DIR] [--max-steps N] [--json] [--stream]
// "goal"`: it builds the tool stack and runs the agent loop on it.
func runAgentCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, code, ok := parseRunFlags(args, os.Getenv, stderr)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := buildStack(ctx, &o.stack, logger(stderr, false))
	if err != nil {
		return command{"run", stderr}.fail(1, err)
	}
	defer st.close()
	closeEnvs, err := st.useLocalEnvironments(o.environment)
	if err != nil {
		return command{"run", stderr}.fail(1, err)
	}
	defer closeEnvs()
	log := slog.New(slog.DiscardHandler)
	if o.verbose {
		log = logger(stderr, true)
	}
	st.log = log
	m := st.runManager(agent.ManagerConfig{
		Loop:   agent.Config{MaxSteps: o.maxSteps, Stream: o.stream, WallBudget: o.budget},
		Caller: "cli",
	}, o.provider, nil)
	defer closeWithin(m.Close)
	return runAgent(o, m, stdout, stderr)
}

// runAgent runs the goal on m and prints each step as it happens, then
// the final answer on stdout; it returns the exit code.
func runAgent(o runOptions, m *agent.Manager, stdout, stderr io.Writer) int {
	cmd := command{"run", stderr}
	view, err := m.Start(agent.RunRequest{Goal: o.goal, Mount: o.mount, MaxSteps: o.maxSteps, Owner: runAgentOwner, Environment: o.environment})
	if err != nil {
		return cmd.fail(1, err)
	}
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-sig.Done()
		stop() // a second signal kills the process
		_ = m.Cancel(runAgentOwner, view.ID)
	}()
	events, err := m.Events(context.Background(), runAgentOwner, view.ID, 0)
	if err != nil {
		return cmd.fail(1, err)
	}
	p := newRunPrinter(stdout, stderr, o.asJSON)
	defer p.spin.stop()
	for ev := range events {
		p.event(ev)
		if ev.Type == wire.EventApprovalNeeded {
			p.decide(m, view.ID, ev)
		}
	}
	final, err := m.Get(runAgentOwner, view.ID)
	if err != nil {
		return cmd.fail(1, err)
	}
	return runExitCode(final.Status)
}

// runExitCode maps a run's final status to the process exit code.
func runExitCode(s wire.RunStatus) int {
	switch s {
	case wire.RunDone, wire.RunMaxSteps:
		return 0
	case wire.RunCancelled:
		return 130
	default:
		return 1
	}
}
