package sandbox

import "errors"

// Platform errors. User-code outcomes are never errors; see Status.
var (
	// ErrSessionNotFound: the session id is unknown, closed or expired.
	ErrSessionNotFound = errors.New("session_not_found")
	// ErrBusy: a session or concurrency limit refused the request; retry later.
	ErrBusy = errors.New("busy")
	// ErrUnavailable: the Docker daemon cannot be reached or failed.
	ErrUnavailable = errors.New("unavailable")
	// ErrImageMissing: the sandbox image is not built (run `make images`).
	ErrImageMissing = errors.New("image missing")
)

// More platform-side refusals for file operations.
var (
	// ErrTooLarge: a file or upload is over its size limit.
	ErrTooLarge = errors.New("too large")
	// ErrFile: a file operation was refused inside the sandbox (missing
	// file, symlink, not a regular file, bad path).
	ErrFile = errors.New("file refused")
)

// ErrRejected: a request was refused as invalid (bad limits, env, path...);
// the message says what was wrong.
var ErrRejected = errors.New("rejected")
