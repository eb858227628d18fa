package main

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/airlock-dev/airlock/internal/testscale"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/approvals"
	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/prometheus/client_golang/prometheus"
)

// fakeEngine stands in for the sandbox engine: it answers every request
// with its code echoed, and records its life cycle.
type fakeEngine struct {
	mu      sync.Mutex
	reqs    []core.Request
	started bool
	closed  bool
}

// Handle implements jobs.Engine: it echoes the code on stdout.
// The output also goes to the call's live sink, when it has one.
func (e *fakeEngine) Handle(ctx context.Context, req core.Request) (core.Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.started || e.closed {
		return core.Result{}, errors.New("fake engine not running")
	}
	e.reqs = append(e.reqs, req)
	out := "fake:" + req.Code + "\n"
	if sink := core.SinkFrom(ctx); sink != nil {
		sink(core.Event{Kind: "stdout", Text: out})
	}
	return core.Result{Status: core.StatusOK, Stdout: out}, nil
}

// Start implements stackEngine.
func (e *fakeEngine) Start(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.started = true
	return nil
}

// Close implements stackEngine.
func (e *fakeEngine) Close(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	return nil
}

// state returns the recorded requests and life cycle.
func (e *fakeEngine) state() ([]core.Request, bool, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]core.Request(nil), e.reqs...), e.started, e.closed
}

// runCall sends one tool call through the stack's dispatcher.
func runCall(t *testing.T, st *stack, name string, args map[string]any) dispatcher.Result {
	t.Helper()
	raw, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	return st.disp.Run(ctx, dispatcher.Call{Name: name, Arguments: raw, Owner: "test"})
}

// checkChain asserts that a call went dispatcher → jobs → queue → worker →
// engine and back, and that close stops the engine.
func checkChain(t *testing.T, st *stack, eng *fakeEngine) {
	t.Helper()
	r := runCall(t, st, dispatcher.ToolRunPython, map[string]any{"code": "print(6*7)"})
	if r.Status != dispatcher.StatusOK || !strings.Contains(r.Content, "fake:print(6*7)") {
		t.Fatalf("run_python through the stack: %s %q: %s", r.Status, r.Reason, r.Content)
	}
	r = runCall(t, st, dispatcher.ToolExecuteShell, map[string]any{"command": "sudo ls"})
	if r.Status != dispatcher.StatusRejected {
		t.Fatalf("policy must refuse before the queue: %s %q", r.Status, r.Reason)
	}
	reqs, started, _ := eng.state()
	if !started || len(reqs) != 1 || reqs[0].Language != core.Python || reqs[0].Owner != "test" || reqs[0].JobID == "" {
		t.Fatalf("engine saw %+v (started %v)", reqs, started)
	}
	if st.engine != nil {
		t.Errorf("a test engine must not be taken for the Docker one")
	}
	st.close()
	if _, _, closed := eng.state(); !closed {
		t.Errorf("close did not stop the engine")
	}
}

func TestBuildStackInProcess(t *testing.T) {
	eng := &fakeEngine{}
	f := &stackFlags{queueName: "t"}
	st, err := buildStackWith(context.Background(), f, slog.New(slog.DiscardHandler), func(*slog.Logger, prometheus.Registerer) (stackEngine, error) { return eng, nil })
	if err != nil {
		t.Fatal(err)
	}
	if st.rdb != nil {
		t.Errorf("no Redis client without --redis")
	}
	if _, ok := st.agentApr.(*approvals.Memory); !ok {
		t.Errorf("agent approvals without --redis: %T", st.agentApr)
	}
	checkChain(t, st, eng)
}

func TestBuildStackRedis(t *testing.T) {
	srv := redistest.Start(t, false)
	eng := &fakeEngine{}
	f := &stackFlags{redis: srv.URL(), queueName: "wire", concurrency: 1}
	st, err := buildStackWith(context.Background(), f, slog.New(slog.DiscardHandler), func(*slog.Logger, prometheus.Registerer) (stackEngine, error) { return eng, nil })
	if err != nil {
		t.Fatal(err)
	}
	// The agent's approvals live in Redis under the queue's name.
	ctx := context.Background()
	if err := st.agentApr.Put(ctx, approvals.Record{Run: "run1", Token: "tok", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	rdb := srv.Client(t)
	keys, err := rdb.Keys(ctx, "airlock:{wire:agent}:*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("agent approval not in Redis: %v %v", keys, err)
	}
	checkChain(t, st, eng)
}

func TestBuildStackNoWorker(t *testing.T) {
	srv := redistest.Start(t, false)
	f := &stackFlags{redis: srv.URL(), queueName: "nowork"}
	st, err := buildStackWith(context.Background(), f, slog.New(slog.DiscardHandler), func(*slog.Logger, prometheus.Registerer) (stackEngine, error) {
		t.Fatal("with --redis and --concurrency 0 no engine is built")
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	if st.worker != nil || st.disp == nil || st.client == nil {
		t.Errorf("stack without worker: %+v", st)
	}
}

func TestBuildStackEngineError(t *testing.T) {
	f := &stackFlags{queueName: "t"}
	_, err := buildStackWith(context.Background(), f, slog.New(slog.DiscardHandler), func(*slog.Logger, prometheus.Registerer) (stackEngine, error) {
		return nil, errors.New("no docker here")
	})
	if err == nil || !strings.Contains(err.Error(), "no docker here") {
		t.Fatalf("engine error not returned: %v", err)
	}
}

// TestExecDocker runs `airlock exec` on the real Docker engine and images.
func TestExecDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	requireSandbox(t)
	python, shell := envOr("AIRLOCK_PYTHON_IMAGE", "airlock/python:latest"), envOr("AIRLOCK_SHELL_IMAGE", "airlock/shell:latest")
	clearEnv(t)
	t.Setenv("AIRLOCK_PYTHON_IMAGE", python) // the images under test stay pinned
	t.Setenv("AIRLOCK_SHELL_IMAGE", shell)
	code, stdout, stderr := airlock("exec", "--pool", "0", "run_python", "print(6*7)")
	if code != 0 || strings.TrimSpace(stdout) != "42" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
