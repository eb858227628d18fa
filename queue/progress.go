package queue

import "context"

// progressKey carries a running job's progress sender in its handler context.
type progressKey struct{}

// MaxProgressBytes bounds one progress message; longer ones are dropped.
const MaxProgressBytes = 256 << 10

// Progress sends data from a running handler to the caller waiting in Do
// for this job (Job.OnProgress). Messages arrive in order and before the
// job's outcome, best effort: a message is dropped rather than stall the
// handler when the caller is slow or the backend is unreachable, and
// messages over MaxProgressBytes are dropped. Outside a handler, or when the
// caller gave no OnProgress, it does nothing.
func Progress(ctx context.Context, data []byte) {
	if f, ok := ctx.Value(progressKey{}).(func([]byte)); ok && len(data) <= MaxProgressBytes {
		f(data)
	}
}

// Listening reports whether Progress delivers anywhere from ctx: the job's
// caller asked for progress (in-process), or the job has a caller to
// publish to (Redis, where the worker cannot tell whether it listens). A
// handler may skip building progress messages when it is false.
func Listening(ctx context.Context) bool {
	_, ok := ctx.Value(progressKey{}).(func([]byte))
	return ok
}

// withProgress returns ctx carrying send as the job's progress sender.
func withProgress(ctx context.Context, send func([]byte)) context.Context {
	return context.WithValue(ctx, progressKey{}, send)
}
