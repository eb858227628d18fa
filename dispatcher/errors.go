package dispatcher

import (
	"errors"

	"github.com/airlock-dev/airlock/core"
)

// Failures of the dispatcher itself. Each carries a core.Code; an
// Executor's errors carry theirs, and Run maps the Code to a Status.
var (
	// ErrNoExecutor means the Dispatcher was built without an Executor.
	ErrNoExecutor = core.E("dispatcher", core.ErrUnavailable, errors.New("no executor configured"))
	// ErrPanic wraps a recovered panic from a handler or an Executor.
	ErrPanic = core.E("dispatcher", core.ErrInternal, errors.New("panic"))
	// ErrApprovalNotFound means an approval token is unknown, expired or
	// already resolved (tokens resolve exactly once).
	ErrApprovalNotFound = core.E("dispatcher", core.ErrNotFound, errors.New("approval token not found, expired or already used"))
)

// platformStatus is the Status of a platform failure with code: the
// code's own name, with the admission codes read as busy, the
// did-not-answer-in-time codes as unavailable and a missing session as
// session_not_found. Anything else is internal.
func platformStatus(code core.Code) Status {
	switch code {
	case core.ErrSessionLost:
		return StatusSessionLost
	case core.ErrNotFound:
		return StatusSessionNotFound
	case core.ErrBusy, core.ErrQuota, core.ErrRateLimited:
		return StatusBusy
	case core.ErrUnavailable, core.ErrDeadline, core.ErrCanceled:
		return StatusUnavailable
	}
	return StatusInternal
}
