package client_test

import (
	"context"
	"fmt"
	"github.com/airlock-dev/airlock/internal/testscale"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/agent/agenttest"
	"github.com/airlock-dev/airlock/api"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/jobs"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/queue"
	"github.com/airlock-dev/airlock/sandbox"
)

// Keys of the test servers; the server only keeps their hashes.
const (
	keyAlice = "alice-client-key-0123456789"
	keyBob   = "bob-client-key-0123456789ab"
)

// Set by TestMain: the shared server the tests and Examples talk to.
var (
	airlockURL string
	airlockKey = keyAlice
	shared     *stack
)

// TestMain starts one real stack (Docker sandbox engine, in-process
// queue, worker, dispatcher, agent manager on a scripted model) and an
// api.Server on it. Without Docker or the sandbox images the package is
// skipped, except in CI (CI=true), where that fails.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	st, err := newStack()
	if err != nil {
		if os.Getenv("CI") == "true" {
			fmt.Fprintf(os.Stderr, "client tests: %v (CI=true, so this fails)\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "client tests: skipping: %v\n", err)
		return 0
	}
	defer st.close()
	shared = st
	srv, err := st.server(nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "client tests: %v\n", err)
		return 1
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	airlockURL = hs.URL
	return m.Run()
}

// stack is the real object graph `airlock serve` builds.
type stack struct {
	log    *slog.Logger
	engine *sandbox.Engine
	queue  queue.Queue
	disp   *dispatcher.Dispatcher
	jobs   *jobs.Client
	model  *agenttest.Server
	runs   *agent.Manager
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

// newStack builds the graph on the local Docker daemon.
func newStack() (*stack, error) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("AIRLOCK_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	dc, err := sandbox.NewDockerClient()
	if err != nil {
		return nil, fmt.Errorf("no Docker client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	if _, err := dc.Ping(ctx); err != nil {
		return nil, fmt.Errorf("the Docker daemon does not answer: %w", err)
	}
	cfg := sandbox.DefaultConfig()
	cfg.PoolSize = 0
	cfg.Images = map[core.Language]string{
		core.Python: envOr("AIRLOCK_PYTHON_IMAGE", "airlock/python:latest"),
		core.Shell:  envOr("AIRLOCK_SHELL_IMAGE", "airlock/shell:latest"),
	}
	for _, img := range cfg.Images {
		if _, err := dc.ImageInspect(ctx, img); err != nil {
			return nil, fmt.Errorf("sandbox image %s is not built (run `make images`): %w", img, err)
		}
	}
	st := &stack{log: log}
	st.engine = sandbox.New(cfg, dc, log)
	if err := st.engine.Start(context.Background()); err != nil {
		return nil, fmt.Errorf("sandbox engine: %w", err)
	}
	q, err := queue.Open(queue.Config{Name: "client-test"}, queue.Deps{Logger: log, Registerer: prometheus.NewRegistry()})
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	st.queue = q
	w, err := q.NewWorker(queue.WorkerConfig{Concurrency: 2}, jobs.NewRunner(st.engine))
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	wctx, stop := context.WithCancel(context.Background())
	st.stop = stop
	st.wg.Add(1)
	go func() { defer st.wg.Done(); _ = w.Run(wctx) }()
	st.jobs = jobs.NewClient(q, jobs.ClientConfig{DefaultTimeout: cfg.Defaults.Timeout})
	st.disp = dispatcher.New(dispatcher.DefaultConfig(), st.jobs, log)
	st.model = agenttest.NewServer()
	st.runs = agent.NewManager(agent.ManagerConfig{Caller: "api"}, agentTools{st.disp},
		agent.Provider{BaseURL: st.model.URL, APIKey: "test", Model: "scripted"}, log)
	return st, nil
}

// server builds an api.Server for alice and bob on the stack; mut may
// change its config.
func (st *stack) server(mut func(*api.Config)) (*api.Server, error) {
	ks, err := keys.New("alice:"+keyAlice, "bob:"+keyBob)
	if err != nil {
		return nil, err
	}
	cfg := api.Config{Keys: ks, RateBurst: 1000, RatePerSecond: 1000, Heartbeat: time.Second}
	if mut != nil {
		mut(&cfg)
	}
	reg := prometheus.NewRegistry()
	return api.New(cfg, api.Deps{
		Dispatcher: apiDispatcher{st.disp},
		Sessions:   apiSessions{st.jobs},
		Runs:       st.runs,
		Checks:     []api.ReadinessCheck{{Name: "docker", Check: st.engine.Ping}, {Name: "queue", Check: st.queue.Ping}},
		Gatherer:   reg, Registerer: reg, Logger: st.log,
	})
}

// serve starts another server on the shared stack for one test.
func serve(t *testing.T, mut func(*api.Config)) string {
	t.Helper()
	srv, err := shared.server(mut)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs.URL
}

// close stops the runs, the worker, the engine and the queue.
func (st *stack) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = st.runs.Close(ctx)
	st.model.Close()
	st.stop()
	st.wg.Wait()
	_ = st.engine.Close(ctx)
	_ = st.queue.Close()
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// agentTools adapts the dispatcher to the agent's Tools (as cmd/airlock does).
type agentTools struct{ *dispatcher.Dispatcher }

func (t agentTools) OpenAITools() []openai.ChatCompletionToolUnionParam {
	return t.Registry().OpenAITools()
}
func (t agentTools) SystemPrompt() string { return t.Registry().SystemPrompt() }

// apiDispatcher adapts the dispatcher to the API's Dispatcher.
type apiDispatcher struct{ *dispatcher.Dispatcher }

func (d apiDispatcher) ToolsJSON() []map[string]any { return d.Registry().OpenAIToolsJSON() }

// apiSessions adapts the jobs client to the API's Sessions.
type apiSessions struct{ *jobs.Client }

func (s apiSessions) Open(ctx context.Context, owner string, limits core.Limits, background bool) (string, error) {
	return s.OpenSessionOpts(ctx, owner, limits, background)
}
func (s apiSessions) Close(ctx context.Context, owner, id string) error {
	return s.CloseSession(ctx, owner, id)
}

// scriptedAnswer is a model turn answering text.
func scriptedAnswer(text string) agenttest.Turn { return agenttest.Say(text) }
