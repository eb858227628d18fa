package api

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/batch"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/sessions"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// Dispatcher is the one entry every tool call goes through. Run never
// returns a Go error: platform failures come back as Result.Status busy,
// unavailable, internal, session_not_found or session_lost, with Result.Err.
type Dispatcher interface {
	// Run validates, authorises and executes one call.
	Run(ctx context.Context, call dispatcher.Call) dispatcher.Result
	// ToolsJSON returns the registry as the OpenAI `tools` array.
	ToolsJSON() []map[string]any
}

// Runs is the agent run manager, reduced to what the API calls.
type Runs interface {
	// Start begins a run and returns its first snapshot.
	Start(req agent.RunRequest) (wire.Run, error)
	// Get returns a snapshot of owner's run id.
	Get(owner, id string) (wire.Run, error)
	// Events replays the events with Seq > after, then live ones; the
	// channel closes when the run has ended or ctx is done.
	Events(ctx context.Context, owner, id string, after int) (<-chan wire.RunEvent, error)
	// Cancel stops the run.
	Cancel(owner, id string) error
	// Approve resolves the pending call behind token.
	Approve(owner, runID, token string, approve bool, reason string) error
	// Configured reports whether a model endpoint is configured.
	Configured() bool
}

// ReadinessCheck is one named dependency probe for /readyz, e.g. "docker"
// or "redis". Check returns nil when the dependency is reachable.
type ReadinessCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// Deps are the collaborators of the API. Dispatcher is required; without
// Sessions the session routes answer 503, without Runs the run routes answer
// 503 "no_model".
type Deps struct {
	Dispatcher Dispatcher
	Sessions   sessions.Backend
	Runs       Runs
	// MCP serves /mcp; nil answers 503 there.
	MCP MCP
	// Checks are probed, concurrently, by /readyz.
	Checks []ReadinessCheck
	// Gatherer is served at /metrics; nil serves only the API's own metrics.
	Gatherer prometheus.Gatherer
	// Registerer receives the API's HTTP metrics; nil means a private
	// registry (then also served at /metrics when Gatherer is nil).
	Registerer prometheus.Registerer
	// State is the shared durable store of session records, artifacts,
	// idempotency keys and saved notebooks; replicas sharing it answer for
	// each other's sessions. nil means a private state.NewMemory.
	State state.Store
	// Batches is the state store of /v1/batches; nil answers 503 there.
	Batches state.Store
	// BatchConfig configures the batch runner (its Artifacts hook is the
	// API's own).
	BatchConfig batch.Config
	// Environments resolves the environment a session names and serves
	// /v1/environments; nil knows the built-in environments only and
	// answers 503 there.
	Environments Environments
	// Logger receives access and error logs; nil discards them.
	Logger *slog.Logger
}
