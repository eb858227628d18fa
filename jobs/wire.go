package jobs

import (
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/sandbox"
)

// envelope is a job's reply payload.
type envelope struct {
	Result *sandbox.Result `json:"result,omitempty"`
	Error  *wireError      `json:"error,omitempty"`
}

// wireError is a platform error or refusal that crossed the queue.
type wireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// codes maps sandbox sentinels to wire codes and back.
var codes = []struct {
	code string
	err  error
}{
	{"session_not_found", sandbox.ErrSessionNotFound},
	{"busy", sandbox.ErrBusy},
	{"image_missing", sandbox.ErrImageMissing},
	{"unavailable", sandbox.ErrUnavailable},
	{"too_large", sandbox.ErrTooLarge},
	{"file", sandbox.ErrFile},
	{"rejected", sandbox.ErrRejected},
}

// toWire encodes an error from the engine.
func toWire(err error) *wireError {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return &wireError{Code: c.code, Message: err.Error()}
		}
	}
	return &wireError{Code: "internal", Message: err.Error()}
}

// remoteError is an error that a worker reported.
type remoteError struct {
	msg      string
	sentinel error
}

// Error returns the worker's message.
func (e *remoteError) Error() string { return e.msg }

// Unwrap exposes the sandbox sentinel the worker reported, for errors.Is.
func (e *remoteError) Unwrap() error { return e.sentinel }

// fromWire decodes an error reported by a worker.
func fromWire(w *wireError) error {
	for _, c := range codes {
		if c.code == w.Code {
			return &remoteError{msg: w.Message, sentinel: c.err}
		}
	}
	return &remoteError{msg: fmt.Sprintf("worker: %s", w.Message)}
}
