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
)

// runAgentOwner owns the CLI's runs.
const runAgentOwner = "cli"

// runAgent implements `airlock run [--model M] [--base-url U]
// [--api-key-env VAR] [--mount DIR] [--max-steps N] [--json] [--stream]
// "goal"`: it runs the agent loop with tools (the dispatcher) and prints
// each step as it happens, then the final answer on stdout.
func runAgent(args []string, tools agent.Tools, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "model name (default $"+agent.EnvModel+")")
	baseURL := fs.String("base-url", "", "OpenAI-compatible base URL, e.g. http://localhost:11434/v1 (default $"+agent.EnvBaseURL+")")
	keyEnv := fs.String("api-key-env", agent.EnvAPIKey, "environment variable holding the API key")
	mount := fs.String("mount", "", "host folder mounted read-only for the tools")
	maxSteps := fs.Int("max-steps", agent.DefaultMaxSteps, "model calls with tools before a forced final answer")
	asJSON := fs.Bool("json", false, "print events as JSON lines")
	stream := fs.Bool("stream", false, "stream model responses (server-sent events)")
	budget := fs.Duration("timeout", 0, "wall-clock budget for the whole run (0: none)")
	reqTimeout := fs.Duration("request-timeout", agent.DefaultRequestTimeout, "timeout of one model request (raise it for slow local models)")
	verbose := fs.Bool("v", false, "log to stderr")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	goal := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if goal == "" {
		fmt.Fprintln(stderr, `usage: airlock run [--model M] [--base-url U] [--api-key-env VAR] [--mount DIR] [--max-steps N] [--json] [--stream] "goal"`)
		return 2
	}
	getenv := func(k string) string {
		if k == agent.EnvAPIKey { // an explicit --api-key-env never falls back to another variable
			return os.Getenv(*keyEnv)
		}
		return os.Getenv(k)
	}
	provider := agent.ResolveProvider(agent.Provider{BaseURL: *baseURL, Model: *model, Timeout: *reqTimeout}, getenv)
	if !provider.Configured() {
		fmt.Fprintf(stderr, "airlock run: no model configured: pass --model and --base-url (or set %s and %s)\n", agent.EnvModel, agent.EnvBaseURL)
		return 2
	}
	if *mount != "" {
		abs, err := filepath.Abs(*mount)
		if err != nil {
			fmt.Fprintf(stderr, "airlock run: --mount: %v\n", err)
			return 2
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			fmt.Fprintf(stderr, "airlock run: --mount %s is not a folder\n", abs)
			return 2
		}
		*mount = abs
	}
	log := slog.New(slog.DiscardHandler)
	if *verbose {
		log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	m := agent.NewManager(agent.ManagerConfig{
		Loop:   agent.Config{MaxSteps: *maxSteps, Stream: *stream, WallBudget: *budget},
		Caller: "cli",
	}, tools, provider, log)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = m.Close(ctx)
	}()
	view, err := m.Start(agent.RunRequest{Goal: goal, Mount: *mount, MaxSteps: *maxSteps, Owner: runAgentOwner})
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
	p := newRunPrinter(stdout, stderr, *asJSON)
	defer p.spin.stop()
	for ev := range events {
		p.event(ev)
		if ev.Type == agent.EventApprovalNeeded {
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
func runExitCode(s agent.RunStatus) int {
	switch s {
	case agent.RunDone, agent.RunMaxSteps:
		return 0
	case agent.RunCancelled:
		return 130
	default:
		return 1
	}
}

// runAgentCmd builds the tool stack for `airlock run` and hands it to runAgent.
func runAgentCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
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
	return runAgent(args, agentTools{st.disp}, stdout, stderr)
}
