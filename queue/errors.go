package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/core"
)

// Sentinel errors returned (wrapped) by Queue.Do. Test with errors.Is; each
// carries a core.Code, which is what other layers look at.
var (
	// ErrBusy means admission refused the job (queue depth or the owner's
	// in-flight limit); nothing was enqueued. Retry later (HTTP 429).
	ErrBusy = core.E("queue", core.ErrBusy, errors.New("queue full or the owner's in-flight limit reached"))
	// ErrUnavailable means the backend could not be reached to submit the
	// job; it may or may not have been accepted, so a retry should reuse
	// the job ID (Do attaches instead of running it twice).
	ErrUnavailable = core.E("queue", core.ErrUnavailable, errors.New("backend unreachable"))
	// ErrDeadLetter means the job was delivered MaxDeliveries times without
	// producing a result (each worker running it died) and was moved to
	// the dead-letter stream.
	ErrDeadLetter = core.E("queue", core.ErrInternal, errors.New("job dead-lettered"))
	// ErrSessionLost means no live worker holds the job's session: it was
	// never bound, was unbound, or its worker died or shut down.
	ErrSessionLost = core.E("queue", core.ErrSessionLost, errors.New("no live worker holds the session"))
	// ErrDeadline means the job's deadline passed before a result arrived.
	// It also matches context.DeadlineExceeded.
	ErrDeadline = core.E("queue", core.ErrDeadline, errors.New("job deadline exceeded"))
	// ErrCanceled means the caller cancelled the job. It also matches the
	// context's error.
	ErrCanceled = core.E("queue", core.ErrCanceled, errors.New("job canceled"))
	// ErrJobFailed means the handler returned a Go error or panicked: a
	// platform failure, reported with the handler's message.
	ErrJobFailed = core.E("queue", core.ErrInternal, errors.New("job failed"))
	// ErrInvalid means the job itself is malformed (an unknown lane); it
	// was not enqueued.
	ErrInvalid = core.E("queue", core.ErrInvalid, errors.New("invalid job"))
	// ErrClosed means the queue was closed.
	ErrClosed = core.E("queue", core.ErrUnavailable, errors.New("closed"))
)

// Job states as stored (Redis) and reported in metrics.
const (
	stateQueued   = "queued"
	stateRunning  = "running"
	stateOK       = "ok"
	stateFailed   = "failed"
	stateDead     = "dead"
	stateCanceled = "canceled"
	stateDeadline = "deadline"
	stateLost     = "lost"
)

// outcomeErr maps a terminal state and its message to the error Do returns.
func outcomeErr(state, msg string) error {
	switch state {
	case stateOK:
		return nil
	case stateFailed:
		return fmt.Errorf("%w: %s", ErrJobFailed, msg)
	case stateDead:
		return fmt.Errorf("%w: %s", ErrDeadLetter, msg)
	case stateCanceled:
		return fmt.Errorf("%w: %w", ErrCanceled, context.Canceled)
	case stateDeadline:
		return fmt.Errorf("%w: %w", ErrDeadline, context.DeadlineExceeded)
	case stateLost:
		return fmt.Errorf("%w: %s", ErrSessionLost, msg)
	default:
		return fmt.Errorf("queue: unknown job state %q", state)
	}
}

// outcomeLabel names an error for the end-to-end latency metric.
func outcomeLabel(err error) string {
	for _, c := range []struct {
		err   error
		label string
	}{
		{ErrBusy, "busy"}, {ErrUnavailable, "unavailable"}, {ErrDeadLetter, stateDead},
		{ErrSessionLost, stateLost}, {ErrDeadline, stateDeadline}, {ErrCanceled, stateCanceled},
		{ErrJobFailed, stateFailed}, {ErrClosed, "closed"}, {ErrInvalid, "invalid"},
	} {
		if errors.Is(err, c.err) {
			return c.label
		}
	}
	if err != nil {
		return "error"
	}
	return stateOK
}

// errShutdown is the cancellation cause of a handler still running when
// its worker's grace period ends; its job is left for another worker.
var errShutdown = errors.New("queue: worker shutting down")

// errLeaseLost is the cancellation cause of a handler whose job was taken
// over by another worker (fencing); its result would be discarded.
var errLeaseLost = errors.New("queue: lease lost to another worker")

// errJobOver is the cancellation cause of a handler whose job ended
// elsewhere (caller cancelled, deadline).
var errJobOver = errors.New("queue: job ended by its caller")
