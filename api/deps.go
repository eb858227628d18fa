package api

import (
	"context"
	"io"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/batch"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
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

// Sessions opens, closes and transfers files into sandbox sessions. Errors
// are matched with errors.Is against core.ErrSessionNotFound (404),
// ErrBusy (429), ErrTooLarge (413), ErrFile (400) and ErrUnavailable or
// ErrImageMissing (503); anything else is a 500.
type Sessions interface {
	// Open creates a session owned by owner and returns its id. With
	// background, processes its calls start may outlive the calls
	// (core.Request.Background); otherwise the sandbox stops them.
	Open(ctx context.Context, owner string, limits core.Limits, background bool) (string, error)
	// Close destroys the session.
	Close(ctx context.Context, owner, id string) error
	// PutFile streams body to path, relative to the session's work folder,
	// in bounded chunks (never the whole file in memory) and returns the
	// bytes written. A read error of body, such as the *http.MaxBytesError
	// of the upload cap, is returned as is, after the partial file was
	// truncated.
	PutFile(ctx context.Context, owner, id, path string, body io.Reader) (int64, error)
	// GetFile streams path, relative to the session's work folder, in
	// bounded chunks. open is called once with the file's size before the
	// first byte is written, and not at all when the file cannot be read,
	// so the caller can still answer with an error. It returns the bytes
	// written.
	GetFile(ctx context.Context, owner, id, path string, open func(size int64) io.Writer) (int64, error)
	// ListFiles lists the folder path ("" for the work folder) of the
	// session: names, types, sizes and modification times.
	ListFiles(ctx context.Context, owner, id, path string) ([]core.FileEntry, error)
	// InterruptSession raises KeyboardInterrupt in the session's running
	// call and reports whether one was running.
	InterruptSession(ctx context.Context, owner, id string) (bool, error)
	// RestartSession replaces the session's Python process; files are kept.
	RestartSession(ctx context.Context, owner, id string) error
	// SessionInfo describes the live session: state, calls, resource use.
	SessionInfo(ctx context.Context, owner, id string) (core.SessionInfo, error)
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
	Sessions   Sessions
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
	// Logger receives access and error logs; nil discards them.
	Logger *slog.Logger
}
