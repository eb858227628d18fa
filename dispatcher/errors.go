package dispatcher

import (
	"context"
	"errors"

	"github.com/airlock-dev/airlock/sandbox"
)

// Platform errors the dispatcher reports, and that an Executor (for example
// the queue client) may return or wrap so that Run maps them to a Status.
// User-code outcomes are never errors; see Status.
var (
	// ErrBusy means admission was refused (queue full, session busy); retry later.
	ErrBusy = errors.New("dispatcher: busy")
	// ErrUnavailable means the execution backend (Docker, Redis, workers) cannot be reached.
	ErrUnavailable = errors.New("dispatcher: unavailable")
	// ErrSessionNotFound means the call's session id is unknown, closed or expired.
	ErrSessionNotFound = errors.New("dispatcher: session not found")
	// ErrSessionLost means the worker that held the call's session is gone.
	ErrSessionLost = errors.New("dispatcher: session lost")
	// ErrNoExecutor means the Dispatcher was built without an Executor.
	ErrNoExecutor = errors.New("dispatcher: no executor configured")
	// ErrPanic wraps a recovered panic from a handler or an Executor.
	ErrPanic = errors.New("dispatcher: panic")
	// ErrApprovalNotFound means an approval token is unknown, expired or
	// already resolved (tokens resolve exactly once).
	ErrApprovalNotFound = errors.New("dispatcher: approval token not found, expired or already used")
)

// StatusCarrier lets an Executor's error choose the Status directly, without
// importing this package's sentinels: DispatcherStatus returns one of the
// Status values ("busy", "unavailable", "session_not_found",
// "session_lost", "internal"). Anything else maps to StatusInternal.
type StatusCarrier interface {
	DispatcherStatus() string
}

// statusForError maps a platform error from an Executor to a Status.
// Order: a StatusCarrier anywhere in the chain, then errors.Is against the
// dispatcher and sandbox sentinels, then context errors; the rest is internal.
func statusForError(err error) Status {
	var sc StatusCarrier
	if errors.As(err, &sc) {
		switch s := Status(sc.DispatcherStatus()); s {
		case StatusBusy, StatusUnavailable, StatusSessionNotFound, StatusSessionLost, StatusInternal:
			return s
		}
		return StatusInternal
	}
	switch {
	case errors.Is(err, ErrSessionLost):
		return StatusSessionLost
	case errors.Is(err, ErrSessionNotFound), errors.Is(err, sandbox.ErrSessionNotFound):
		return StatusSessionNotFound
	case errors.Is(err, ErrBusy), errors.Is(err, sandbox.ErrBusy):
		return StatusBusy
	case errors.Is(err, ErrUnavailable), errors.Is(err, sandbox.ErrUnavailable),
		errors.Is(err, sandbox.ErrImageMissing), errors.Is(err, ErrNoExecutor):
		return StatusUnavailable
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return StatusUnavailable
	}
	return StatusInternal
}
