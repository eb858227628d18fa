package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/wire"
)

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
	Usage       wire.Usage      `json:"usage"`
}

// event prints one event.
func (p *runPrinter) event(ev wire.RunEvent) {
	if p.json {
		b, _ := json.Marshal(ev)
		fmt.Fprintf(p.stdout, "%s\n", b)
		return
	}
	var d eventData
	_ = json.Unmarshal(ev.Data, &d)
	switch ev.Type {
	case wire.EventStepStarted:
		label := fmt.Sprintf("step %d/%d: waiting for the model", ev.Step, d.MaxSteps)
		if d.Final {
			p.line("· step limit reached: asking for a final answer without tools")
			label = "waiting for the final answer"
		}
		p.spin.set(label)
	case wire.EventAssistantMessage:
		if d.Content != "" && string(d.ToolCalls) != "[]" && string(d.ToolCalls) != "null" {
			p.line("· " + oneLine(d.Content, 200))
		}
	case wire.EventToolCall:
		p.started[d.ID] = ev.Time
		p.line(fmt.Sprintf("→ %s %s", d.Name, oneLine(d.Arguments, 160)))
		p.spin.set("running " + d.Name)
	case wire.EventToolResult:
		took := time.Duration(d.DurationMS) * time.Millisecond
		if t0, ok := p.started[d.ID]; ok && took == 0 {
			took = ev.Time.Sub(t0)
		}
		p.line(fmt.Sprintf("← %s %s (%s) %s", d.Name, d.Status, took.Round(10*time.Millisecond), oneLine(d.Content, 160)))
	case wire.EventApprovalNeeded:
		p.line(fmt.Sprintf("? %s needs approval: %s", d.Name, oneLine(d.Arguments, 200)))
		p.spin.set("waiting for approval")
	case wire.EventError:
		p.line("! " + oneLine(d.Message, 300))
	case wire.EventFinalAnswer:
		p.spin.stop()
		fmt.Fprintln(p.stdout, strings.TrimRight(d.Content, "\n"))
	case wire.EventRunFinished:
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
func (p *runPrinter) decide(m *agent.Manager, runID string, ev wire.RunEvent) {
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
