package queue

import (
	"context"
	"time"
)

// Job is one unit of work crossing the queue. The queue never looks inside
// Payload; it only routes, times and accounts for the job.
type Job struct {
	// ID names the job. Do generates one when empty. Submitting an ID that
	// is still active (or whose outcome is still stored) attaches to that job
	// instead of running it twice, so a caller may safely retry Do with the
	// same ID after ErrUnavailable.
	ID string
	// Owner is the admission key for the per-owner in-flight limit (a user,
	// an API key, a batch). Empty owners share one bucket.
	Owner string
	// Session, when set, routes the job to the one worker that bound this
	// session (see Reply.BindSession). If no live worker holds it, Do returns
	// ErrSessionLost.
	Session string
	// Lane is the lane the job waits in: LaneInteractive (the default) or
	// LaneBatch, which a worker takes only when no interactive job waits.
	// Session jobs go to their session's worker whatever their lane.
	Lane Lane
	// Payload is the opaque request; the handler decodes it.
	Payload []byte
	// Deadline bounds the whole job: waiting, running and delivering the
	// result. Do uses Config.DefaultTimeout when it is zero, and the earlier
	// of Deadline and the caller's context deadline otherwise. The handler's
	// context carries it.
	Deadline time.Time
	// Attempt is set by the queue for the handler: 1 for the first delivery,
	// higher after the job was reclaimed from a dead or stalled worker. It is
	// also the fencing token; callers leave it zero.
	Attempt int
	// EnqueuedAt is set by the queue when the job is accepted.
	EnqueuedAt time.Time
	// OnProgress, when set, receives the messages the handler sends with
	// Progress while the job runs, in order and before Do returns. It runs
	// on the queue's delivery goroutine: it must return quickly. It stays in
	// the calling process; a worker never sees it.
	OnProgress func(data []byte)

	// Environment, when set, is the content hash of the environment the
	// job runs in (issue 28). With Redis, a job with no Session goes to a
	// live worker that advertises the hash (WorkerConfig.Environments), at
	// random among them, in that worker's own stream; when none does, it
	// goes to its lane like any job, and the worker that takes it builds
	// the environment first. The in-process queue ignores it.
	Environment string
	// BuildAllowance is added to the job's deadline when no live worker
	// holds Environment, so the build the taking worker runs first does
	// not count against the call's own time.
	BuildAllowance time.Duration

	// replyTo is the caller's reply channel (Redis), read from the stream.
	replyTo string
}

// Lane is a job's priority lane.
type Lane string

// The lanes: interactive jobs go before batch jobs.
const (
	// LaneInteractive is the default lane (calls a user waits for).
	LaneInteractive Lane = ""
	// LaneBatch holds batch items; a worker serves it only when no
	// interactive job waits.
	LaneBatch Lane = "batch"
)

// valid reports whether l is a known lane.
func (l Lane) valid() bool { return l == LaneInteractive || l == LaneBatch }

// Reply is what a handler returns for a job that it ran.
type Reply struct {
	// Payload is the opaque result handed back to the caller.
	Payload []byte
	// BindSession, when set, binds that session ID to this worker: later
	// jobs with Job.Session equal to it go only to this worker. The binding
	// is written atomically with the result, only if the result is accepted.
	BindSession string
	// UnbindSession, when set, removes that session's binding (if it points
	// at this worker); later jobs for it get ErrSessionLost.
	UnbindSession string
}

// Handler runs jobs on a worker. An error it returns is a platform failure
// (not a user-code outcome, which belongs in Reply.Payload) and reaches the
// caller wrapped in ErrJobFailed; the job is not retried. A panic is
// recovered and treated the same way. Handle must return soon after ctx is
// done: that is how a caller's cancellation, the job deadline and a lost
// lease reach the running work (the sandbox handler kills its container).
type Handler interface {
	Handle(ctx context.Context, j Job) (Reply, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, j Job) (Reply, error)

// Handle calls f(ctx, j).
func (f HandlerFunc) Handle(ctx context.Context, j Job) (Reply, error) { return f(ctx, j) }

// Queue is the job transport between callers (the dispatcher) and workers.
// Both implementations, Memory and Redis, satisfy the same contract.
type Queue interface {
	// Do submits j and waits for its single outcome. It returns the
	// handler's reply payload, or an error wrapping one of ErrBusy,
	// ErrUnavailable, ErrDeadLetter, ErrSessionLost, ErrDeadline,
	// ErrCanceled, ErrJobFailed or ErrClosed. When ctx is done the job is
	// cancelled and a worker running it sees its handler context cancelled.
	Do(ctx context.Context, j Job) ([]byte, error)
	// NewWorker returns a worker that runs h on this queue's jobs. Run it
	// with Worker.Run; several workers may share one queue.
	NewWorker(cfg WorkerConfig, h Handler) (Worker, error)
	// Ping reports whether the backend is reachable (for health checks).
	Ping(ctx context.Context) error
	// Close releases the queue's resources. Callers still waiting in Do get
	// ErrClosed. Workers must be stopped (their Run returned) before Close.
	Close() error
}

// Worker pulls jobs from a Queue and runs them with a Handler.
type Worker interface {
	// ID is the worker's name, unique among live workers.
	ID() string
	// Run serves jobs with up to WorkerConfig.Concurrency (batch jobs) or
	// Concurrency+InteractiveReserve (in all) running at once until ctx is
	// done, then shuts down gracefully: it stops taking jobs,
	// lets running ones finish within WorkerConfig.Grace, cancels the rest
	// (which are left for other workers, not answered), and returns nil.
	// A worker runs at most once.
	Run(ctx context.Context) error
}
