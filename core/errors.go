package core

import (
	"context"
	"errors"
)

// Code is the class of a platform failure: the one error vocabulary of
// every layer, from the sandbox to the HTTP answer (where api maps each Code
// to a status in one place). A Code is itself an error, so failures wrap it
// (fmt.Errorf("...: %w", core.ErrBusy) or E) and callers test it with
// errors.Is or read it with CodeOf. What user code did is never a Code: it
// is a Result's Status.
type Code string

// Error returns the code's name.
func (c Code) Error() string { return string(c) }

// The platform error codes. Their names are also the "code" field of the
// API's error answers.
const (
	ErrInvalid      Code = "bad_request"  // the request was refused as invalid; the message says why
	ErrUnauthorized Code = "unauthorized" // missing or unknown API key
	ErrForbidden    Code = "forbidden"    // the key may not use what it named (an environment, an admin route)
	ErrNotFound     Code = "not_found"    // unknown resource (or another owner's)
	ErrConflict     Code = "conflict"     // the resource's state forbids the request
	ErrSessionLost  Code = "session_lost" // the worker holding the session is gone
	ErrTooLarge     Code = "too_large"    // a body, file or upload is over its limit
	ErrRateLimited  Code = "rate_limited" // the owner's request rate is spent
	ErrBusy         Code = "busy"         // a concurrency or capacity limit; retry later
	ErrQuota        Code = "quota"        // an owner's budget (sessions, memory, bytes) is spent
	ErrInternal     Code = "internal"     // a platform bug or failure
	ErrUnavailable  Code = "unavailable"  // Docker, Redis or the workers cannot be reached
	ErrNotReady     Code = "not_ready"    // a readiness check failed
	ErrNoModel      Code = "no_model"     // no model endpoint is configured
	ErrDeadline     Code = "deadline"     // the request's deadline passed
	ErrCanceled     Code = "canceled"     // the caller went away
)

// Codes lists every Code, for tests and documentation.
func Codes() []Code {
	return []Code{ErrInvalid, ErrUnauthorized, ErrForbidden, ErrNotFound, ErrConflict, ErrSessionLost,
		ErrTooLarge, ErrRateLimited, ErrBusy, ErrQuota, ErrInternal, ErrUnavailable,
		ErrNotReady, ErrNoModel, ErrDeadline, ErrCanceled}
}

// Error is a platform failure: the operation that failed, its Code and the
// underlying error. errors.Is(err, code) matches its Code.
type Error struct {
	Op   string // the failing operation, e.g. "sandbox.exec"
	Code Code
	Err  error // what happened; may be nil
}

// E wraps err as a failure of op with code.
func E(op string, code Code, err error) error {
	return &Error{Op: op, Code: code, Err: err}
}

// Errorf builds a failure of op with code and a plain message.
func Errorf(op string, code Code, msg string) error {
	return &Error{Op: op, Code: code, Err: errors.New(msg)}
}

// Error returns "op: message" (or the code when there is no message).
func (e *Error) Error() string {
	msg := string(e.Code)
	if e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Op == "" {
		return msg
	}
	return e.Op + ": " + msg
}

// Unwrap exposes the Code and the underlying error to errors.Is and As.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Code}
	}
	return []error{e.Code, e.Err}
}

// Message returns the underlying message without the operation prefix.
func (e *Error) Message() string {
	if e.Err == nil {
		return string(e.Code)
	}
	return e.Err.Error()
}

// CodeOf returns the Code err carries: the first Code in its chain, else
// ErrDeadline or ErrCanceled for context errors, else ErrInternal. CodeOf(nil)
// is "".
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var c Code
	if errors.As(err, &c) {
		return c
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return ErrDeadline
	case errors.Is(err, context.Canceled):
		return ErrCanceled
	}
	return ErrInternal
}

// ErrSessionNotFound means a session id is unknown, closed or expired (or
// another owner's). It carries ErrNotFound.
var ErrSessionNotFound = &Error{Code: ErrNotFound, Err: errors.New("session not found")}
