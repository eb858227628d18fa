package jupyter

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// Spec is one kernel spec: an environment the key may run kernels in.
type Spec struct {
	// Name is the environment's name (the kernel name clients send).
	Name string
	// DisplayName is what front ends show, e.g. "Python 3 (Airlock)".
	DisplayName string
	// Language is the kernel's language, e.g. "python".
	Language string
	// Environment is the environment its kernels run in ("" : Name).
	Environment string
}

// environment is the environment s's kernels run in.
func (s Spec) environment() string {
	if s.Environment != "" {
		return s.Environment
	}
	return s.Name
}

// Session is what the gateway shows of a session as a kernel.
type Session struct {
	ID       string
	Created  time.Time
	LastUsed time.Time
	// State is idle or busy as the sandbox sees it ("" when unknown).
	State string
	// ExecCount is how many calls the session has run.
	ExecCount int
	// Environment is the environment the session runs in ("": python).
	Environment string
}

// Cell is one execute_request as the backend runs it.
type Cell struct {
	Code string
	// AllowStdin lets input() ask the client (core.EventInput).
	AllowStdin bool
}

// Backend is what the gateway needs from Airlock, all of it per owner: an
// unknown session, or another owner's, is an error carrying
// core.ErrNotFound. Errors carry core codes; the gateway never maps them
// to HTTP statuses itself (Config.WriteError does).
type Backend interface {
	// Specs lists the kernel specs owner may start, the default first.
	Specs(owner string) []Spec
	// Open opens a session for a kernel of spec and returns its id.
	Open(ctx context.Context, owner string, spec Spec) (string, error)
	// Close closes the session.
	Close(ctx context.Context, owner, id string) error
	// Sessions lists owner's sessions (every one is usable as a kernel).
	Sessions(ctx context.Context, owner string) ([]Session, error)
	// Session describes one of owner's sessions.
	Session(ctx context.Context, owner, id string) (Session, error)
	// Execute runs cell in the session through the one dispatch path with
	// notebook conventions (core.Request.Notebook); the events of the call
	// go to the core.Sink ctx carries. A refusal or an outcome of the code
	// is a Result; a platform failure is an error.
	Execute(ctx context.Context, owner, id string, cell Cell) (core.Result, error)
	// Interrupt raises KeyboardInterrupt in the session's running call.
	Interrupt(ctx context.Context, owner, id string) error
	// Restart replaces the session's Python process (files are kept).
	Restart(ctx context.Context, owner, id string) error
	// Introspect asks the session's kernel about code; the answer is the
	// content of Jupyter's complete, inspect or is_complete reply.
	Introspect(ctx context.Context, owner, id, code string, q core.Introspect) (json.RawMessage, error)
	// Input answers the input() the session's running call waits in.
	Input(ctx context.Context, owner, id, value string) error
}

// Config configures a Gateway.
type Config struct {
	// CullIdle ends kernels this gateway started or served that have run
	// nothing for this long (0: never; the session's own idle limit still
	// applies), like Enterprise Gateway's culling.
	CullIdle time.Duration
	// CullInterval is how often idle kernels are looked for (default a
	// tenth of CullIdle, between 1 s and 1 min).
	CullInterval time.Duration
	// MaxMessageBytes bounds one websocket message from a client (default 16 MiB).
	MaxMessageBytes int64
	// MaxQueued bounds a kernel's shell requests waiting behind the running
	// one (default 256); past it a request is answered with an error.
	MaxQueued int
	// WriteError answers a failed REST request; it maps the error's core
	// code to the HTTP status (in the API, the one place that does).
	WriteError func(w http.ResponseWriter, r *http.Request, err error)
	// Stop, when closed, ends every websocket connection and the culler
	// (the server is shutting down).
	Stop <-chan struct{}
	// Logger receives diagnostics; nil discards them.
	Logger Logger
}

// Logger is the part of *slog.Logger the gateway logs with.
type Logger interface {
	Info(msg string, args ...any)
	Warn(msg string, args ...any)
}
