package queue

import "errors"

// ErrNotStarted marks an ErrSessionLost of a session job that never
// reached a worker: when it was submitted no live worker held its session
// (never bound, unbound, or its worker's liveness was gone). Running it
// again elsewhere cannot run it twice. A session job lost while it waited
// or ran (its worker died then) does not carry it: it may have run.
var ErrNotStarted = errors.New("the job was not started")

// notStarted is err marked with ErrNotStarted; its message is err's.
type notStarted struct{ error }

// Unwrap returns the marked error.
func (e notStarted) Unwrap() error { return e.error }

// Is makes errors.Is(err, ErrNotStarted) true.
func (notStarted) Is(target error) bool { return target == ErrNotStarted }
