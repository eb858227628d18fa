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

// runOptions are the parsed flags of `airlock run`.
type runOptions struct {
	goal       string
	provider   agent.Provider
	mount      string
	maxSteps   int
	asJSON     bool
	stream     bool
	budget     time.Duration
	verbose    bool
	reqTimeout time.Duration
}

// parseRunFlags parses the flags of `airlock run` and resolves the model
// provider with getenv. ok false means stop with exit code code (usage
// and errors already printed to stderr).
func parseRunFlags(args []string, getenv func(string) string, stderr io.Writer) (o runOptions, code int, ok bool) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "model name (default $"+agent.EnvModel+")")
	baseURL := fs.String("base-url", "", "OpenAI-compatible base URL, e.g. http://localhost:11434/v1 (default $"+agent.EnvBaseURL+")")
	keyEnv := fs.String("api-key-env", agent.EnvAPIKey, "environment variable holding the API key")
	fs.StringVar(&o.mount, "mount", "", "host folder mounted read-only for the tools")
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
	o.provider = resolveProvider(*model, *baseURL, *keyEnv, o.reqTimeout, getenv)
	if !o.provider.Configured() {
		fmt.Fprintf(stderr, "airlock run: no model configured: pass --model and --base-url (or set %s and %s)\n", agent.EnvModel, agent.EnvBaseURL)
		return o, 2, false
	}
	if o.mount != "" {
		abs, err := filepath.Abs(o.mount)
		if err != nil {
			fmt.Fprintf(stderr, "airlock run: --mount: %v\n", err)
			return o, 2, false
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			fmt.Fprintf(stderr, "airlock run: --mount %s is not a folder\n", abs)
			return o, 2, false
		}
		o.mount = abs
	}
	return o, 0, true
}

// resolveProvider fills the model flags from the environment (getenv);
// the API key is read from keyEnv, and an explicit --api-key-env never
// falls back to another variable.
func resolveProvider(model, baseURL, keyEnv string, timeout time.Duration, getenv func(string) string) agent.Provider {
	env := func(k string) string {
		if k == agent.EnvAPIKey {
			return getenv(keyEnv)
		}
		return getenv(k)
	}
	return agent.ResolveProvider(agent.Provider{BaseURL: baseURL, Model: model, Timeout: timeout}, env)
}

// runAgent implements `airlock run [--model M] [--base-url U]
// [--api-key-env VAR] [--mount DIR] [--max-steps N] [--json] [--stream]
// "goal"` once the flags are parsed: it runs the agent loop with tools (the
// dispatcher) and prints each step as it happens, then the final answer on
// stdout.
func runAgent(o runOptions, tools agent.Tools, stdout, stderr io.Writer) int {
	provider := o.provider
	log := slog.New(slog.DiscardHandler)
	if o.verbose {
		log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	m := agent.NewManager(agent.ManagerConfig{
		Loop:   agent.Config{MaxSteps: o.maxSteps, Stream: o.stream, WallBudget: o.budget},
		Caller: "cli",
	}, tools, provider, log)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = m.Close(ctx)
	}()
	view, err := m.Start(agent.RunRequest{Goal: o.goal, Mount: o.mount, MaxSteps: o.maxSteps, Owner: runAgentOwner})
	if err != nil {
		fmt.Fprintf(stderr, "airlock run: %v\n", err)
		return 1
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
		fmt.Fprintf(stderr, "airlock run: %v\n", err)
		return 1
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
		fmt.Fprintf(stderr, "airlock run: %v\n", err)
		return 1
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

// runAgentCmd builds the tool stack for `airlock run` and hands it to runAgent.
func runAgentCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, code, ok := parseRunFlags(args, os.Getenv, stderr)
	if !ok {
		return code
	}
	// The stack's own flags come from the environment so that runAgent
	// keeps the command line to itself.
	var sf stackFlags
	sf.register(flag.NewFlagSet("run-stack", flag.ContinueOnError), true, 0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := buildStack(ctx, &sf, logger(stderr, false))
	if err != nil {
		fmt.Fprintf(stderr, "airlock run: %v\n", err)
		return 1
	}
	defer st.close()
	return runAgent(o, agentTools{Dispatcher: st.disp}, stdout, stderr)
}
