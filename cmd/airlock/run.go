package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
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

// runPrinter shows a run's events: human-readable progress on stderr and
// the final answer on stdout, or JSON lines on stdout.
type runPrinter struct {
	stdout, stderr io.Writer
	json           bool
	spin           *spinner
	started        map[string]time.Time // tool call id → tool_call event time
	runStart       time.Time
}

// newRunPrinter returns a printer; the spinner runs only on a terminal.
func newRunPrinter(stdout, stderr io.Writer, asJSON bool) *runPrinter {
	return &runPrinter{stdout: stdout, stderr: stderr, json: asJSON,
		spin: newSpinner(stderr, !asJSON && isTerminal(stderr)), started: map[string]time.Time{}, runStart: time.Now()}
}

// eventData is the union of the event payloads the printer reads.
type eventData struct {
	MaxSteps    int             `json:"max_steps"`
	Final       bool            `json:"final"`
	Content     string          `json:"content"`
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Arguments   string          `json:"arguments"`
	Status      string          `json:"status"`
	DurationMS  int64           `json:"duration_ms"`
	Token       string          `json:"token"`
	Message     string          `json:"message"`
	Retrying    bool            `json:"retrying"`
	ToolCalls   json.RawMessage `json:"tool_calls"`
	Steps       int             `json:"steps"`
	FinalAnswer string          `json:"final_answer"`
	Error       string          `json:"error"`
	Usage       agent.Usage     `json:"usage"`
}

// event prints one event.
func (p *runPrinter) event(ev agent.Event) {
	if p.json {
		b, _ := json.Marshal(ev)
		fmt.Fprintf(p.stdout, "%s\n", b)
		return
	}
	var d eventData
	_ = json.Unmarshal(ev.Data, &d)
	switch ev.Type {
	case agent.EventStepStarted:
		label := fmt.Sprintf("step %d/%d: waiting for the model", ev.Step, d.MaxSteps)
		if d.Final {
			p.line("· step limit reached: asking for a final answer without tools")
			label = "waiting for the final answer"
		}
		p.spin.set(label)
	case agent.EventAssistantMessage:
		if d.Content != "" && string(d.ToolCalls) != "[]" && string(d.ToolCalls) != "null" {
			p.line("· " + oneLine(d.Content, 200))
		}
	case agent.EventToolCall:
		p.started[d.ID] = ev.Time
		p.line(fmt.Sprintf("→ %s %s", d.Name, oneLine(d.Arguments, 160)))
		p.spin.set("running " + d.Name)
	case agent.EventToolResult:
		took := time.Duration(d.DurationMS) * time.Millisecond
		if t0, ok := p.started[d.ID]; ok && took == 0 {
			took = ev.Time.Sub(t0)
		}
		p.line(fmt.Sprintf("← %s %s (%s) %s", d.Name, d.Status, took.Round(10*time.Millisecond), oneLine(d.Content, 160)))
	case agent.EventApprovalNeeded:
		p.line(fmt.Sprintf("? %s needs approval: %s", d.Name, oneLine(d.Arguments, 200)))
		p.spin.set("waiting for approval")
	case agent.EventError:
		p.line("! " + oneLine(d.Message, 300))
	case agent.EventFinalAnswer:
		p.spin.stop()
		fmt.Fprintln(p.stdout, strings.TrimRight(d.Content, "\n"))
	case agent.EventRunFinished:
		p.spin.stop()
		msg := fmt.Sprintf("%s · %d steps · %d tokens · %s", d.Status, d.Steps, d.Usage.TotalTokens, time.Since(p.runStart).Round(100*time.Millisecond))
		if d.Error != "" {
			msg += " · " + d.Error
		}
		fmt.Fprintln(p.stderr, msg)
	}
}

// decide asks the terminal user about a pending approval; without a
// terminal nobody can approve, so the call is rejected.
func (p *runPrinter) decide(m *agent.Manager, runID string, ev agent.Event) {
	var d eventData
	_ = json.Unmarshal(ev.Data, &d)
	approve, reason := false, "nobody can approve in a non-interactive airlock run"
	if isTerminal(os.Stdin) && isTerminal(p.stderr) {
		p.spin.pause()
		fmt.Fprintf(p.stderr, "approve %s %s? [y/N] ", d.Name, oneLine(d.Arguments, 200))
		answer, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		approve = strings.HasPrefix(strings.ToLower(strings.TrimSpace(answer)), "y")
		reason = "the user said no"
	}
	if err := m.Approve(runAgentOwner, runID, d.Token, approve, reason); err != nil {
		p.line("! approval: " + err.Error())
	}
}

// line prints a progress line above the spinner.
func (p *runPrinter) line(s string) {
	p.spin.pause()
	fmt.Fprintln(p.stderr, s)
}

// oneLine shortens s to one line of at most n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// spinner draws "⠋ label 1.2s" on a terminal while the run waits.
type spinner struct {
	w       io.Writer
	enabled bool

	mu      sync.Mutex
	label   string
	since   time.Time
	drawn   bool
	quit    chan struct{}
	stopped bool
}

// newSpinner starts a spinner on w; a disabled spinner draws nothing.
func newSpinner(w io.Writer, enabled bool) *spinner {
	s := &spinner{w: w, enabled: enabled, quit: make(chan struct{})}
	if enabled {
		go s.loop()
	}
	return s
}

// loop redraws until stopped.
func (s *spinner) loop() {
	frames := []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
	t := time.NewTicker(120 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		s.mu.Lock()
		if s.label != "" {
			fmt.Fprintf(s.w, "\r\033[K%c %s %.1fs", frames[i%len(frames)], s.label, time.Since(s.since).Seconds())
			s.drawn = true
		}
		s.mu.Unlock()
	}
}

// set changes what the spinner says and restarts its clock.
func (s *spinner) set(label string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.label, s.since = label, time.Now()
}

// pause erases the spinner line until the next set.
func (s *spinner) pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	s.label = ""
}

// clear erases the spinner line; s.mu is held.
func (s *spinner) clear() {
	if s.drawn {
		fmt.Fprint(s.w, "\r\033[K")
		s.drawn = false
	}
}

// stop erases the spinner for good.
func (s *spinner) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	s.label = ""
	if !s.stopped {
		s.stopped = true
		close(s.quit)
	}
}
