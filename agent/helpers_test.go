package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/airlock-dev/airlock/internal/testscale"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/agent/agenttest"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/wire"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testKey is the API key tests configure; it must never leak.
const testKey = "sk-test-SECRET-0123456789"

// fakeTools is a Tools that records calls. run and approve override the
// default behaviour: known tools succeed echoing their arguments, unknown
// ones are rejected.
type fakeTools struct {
	run     func(ctx context.Context, c dispatcher.Call) dispatcher.Result
	approve func(ctx context.Context, token string) dispatcher.Result

	mu       sync.Mutex
	calls    []dispatcher.Call
	approved []string
	rejected []string
}

func (f *fakeTools) Run(ctx context.Context, c dispatcher.Call) dispatcher.Result {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	if f.run != nil {
		return f.run(ctx, c)
	}
	return defaultResult(c)
}

func defaultResult(c dispatcher.Call) dispatcher.Result {
	if c.Name != "run_python" && c.Name != "execute_shell" {
		return dispatcher.Result{CallID: c.ID, Name: c.Name, Status: dispatcher.StatusRejected,
			Reason: "unknown_tool", Content: "unknown tool " + c.Name}
	}
	return dispatcher.Result{CallID: c.ID, Name: c.Name, Status: dispatcher.StatusOK,
		Content: "ran " + c.Name + " " + string(c.Arguments)}
}

func (f *fakeTools) Approve(ctx context.Context, token string) (dispatcher.Result, error) {
	f.mu.Lock()
	f.approved = append(f.approved, token)
	f.mu.Unlock()
	if f.approve != nil {
		return f.approve(ctx, token), nil
	}
	return dispatcher.Result{Status: dispatcher.StatusOK, Content: "approved and ran " + token}, nil
}

func (f *fakeTools) Reject(ctx context.Context, token, reason string) (dispatcher.Result, error) {
	f.mu.Lock()
	f.rejected = append(f.rejected, token+": "+reason)
	f.mu.Unlock()
	return dispatcher.Result{Status: dispatcher.StatusRejected, Reason: "approval_rejected", Content: "rejected: " + reason}, nil
}

func (f *fakeTools) OpenAITools() []openai.ChatCompletionToolUnionParam {
	mk := func(name, param string) openai.ChatCompletionToolUnionParam {
		return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        name,
			Description: openai.String("runs " + param),
			Parameters: shared.FunctionParameters{
				"type":       "object",
				"properties": map[string]any{param: map[string]any{"type": "string"}},
				"required":   []string{param},
			},
		})
	}
	return []openai.ChatCompletionToolUnionParam{mk("run_python", "code"), mk("execute_shell", "command")}
}

func (f *fakeTools) SystemPrompt() string { return "You are a test agent. Use the tools." }

func (f *fakeTools) recorded() []dispatcher.Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]dispatcher.Call(nil), f.calls...)
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harness is a Manager wired to a scripted server and fake tools.
type harness struct {
	t     *testing.T
	srv   *agenttest.Server
	tools *fakeTools
	m     *Manager
	logs  *syncBuffer
}

// newHarness starts a server with turns and a Manager against it.
func newHarness(t *testing.T, cfg Config, stream bool, tools *fakeTools, turns ...agenttest.Turn) *harness {
	t.Helper()
	return newHarnessWith(t, ManagerConfig{Loop: cfg}, stream, tools, Provider{}, turns...)
}

// newHarnessWith is newHarness with a full ManagerConfig and provider
// overrides (retry bound).
func newHarnessWith(t *testing.T, mc ManagerConfig, stream bool, tools *fakeTools, p Provider, turns ...agenttest.Turn) *harness {
	t.Helper()
	if tools == nil {
		tools = &fakeTools{}
	}
	srv := agenttest.NewServer(turns...)
	tr := &http.Transport{}
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p.BaseURL, p.APIKey, p.Model = srv.URL, testKey, "test-model"
	p.HTTPClient = &http.Client{Transport: tr}
	p.RetryBaseDelay, p.RetryMaxDelay = time.Millisecond, 4*time.Millisecond
	if p.Retries == 0 {
		p.Retries = 3
	}
	mc.Loop.Stream = stream
	m := NewManager(mc, tools, p, logger)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("close manager: %v", err)
		}
		srv.Close()
		tr.CloseIdleConnections()
	})
	return &harness{t: t, srv: srv, tools: tools, m: m, logs: logs}
}

// run starts a run with goal and waits for it to end.
func (h *harness) run(goal string) (wire.Run, []wire.RunEvent) {
	h.t.Helper()
	v, err := h.m.Start(RunRequest{Goal: goal, Owner: "alice"})
	if err != nil {
		h.t.Fatalf("start: %v", err)
	}
	return h.wait(v.ID)
}

// wait collects a run's events until it ends.
func (h *harness) wait(id string) (wire.Run, []wire.RunEvent) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(60*time.Second))
	defer cancel()
	ch, err := h.m.Events(ctx, "alice", id, 0)
	if err != nil {
		h.t.Fatalf("events: %v", err)
	}
	var evs []wire.RunEvent
	for ev := range ch {
		evs = append(evs, ev)
	}
	if ctx.Err() != nil {
		h.t.Fatalf("run %s did not end", id)
	}
	v, err := h.m.Get("alice", id)
	if err != nil {
		h.t.Fatalf("get: %v", err)
	}
	checkSeq(h.t, evs)
	return v, evs
}

// checkSeq asserts dense Seq numbers from 1 and a final run_finished.
func checkSeq(t *testing.T, evs []wire.RunEvent) {
	t.Helper()
	for i, ev := range evs {
		if ev.Seq != i+1 {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
	if len(evs) == 0 || evs[len(evs)-1].Type != wire.EventRunFinished {
		t.Fatalf("events do not end with run_finished: %v", types(evs))
	}
}

// types lists event types.
func types(evs []wire.RunEvent) []wire.EventType {
	out := make([]wire.EventType, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// ofType returns the data of events of one type, decoded.
func ofType(evs []wire.RunEvent, typ wire.EventType) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		if ev.Type == typ {
			var m map[string]any
			_ = json.Unmarshal(ev.Data, &m)
			out = append(out, m)
		}
	}
	return out
}

// toolMessages returns the role "tool" messages of a request.
func toolMessages(req agenttest.Request) []agenttest.Message {
	var out []agenttest.Message
	for _, m := range req.Messages {
		if m.Role == "tool" {
			out = append(out, m)
		}
	}
	return out
}

// lastAssistant returns a request's last assistant message.
func lastAssistant(t *testing.T, req agenttest.Request) agenttest.Message {
	t.Helper()
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "assistant" {
			return req.Messages[i]
		}
	}
	t.Fatal("no assistant message")
	return agenttest.Message{}
}

// bothModes runs f for non-streaming and streaming model calls.
func bothModes(t *testing.T, f func(t *testing.T, stream bool)) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) { f(t, stream) })
	}
}

// py is a run_python call.
func py(id, code string) agenttest.Call {
	b, _ := json.Marshal(map[string]string{"code": code})
	return agenttest.Call{ID: id, Name: "run_python", Arguments: string(b)}
}

// noServerErrors fails on problems the fake server saw.
func (h *harness) noServerErrors() {
	h.t.Helper()
	if errs := h.srv.Errors(); len(errs) > 0 {
		h.t.Fatalf("server: %s", strings.Join(errs, "; "))
	}
}
