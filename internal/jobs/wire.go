package jobs

import (
	"errors"

	"github.com/airlock-dev/airlock/core"
)

// envelope is a job's reply payload.
type envelope struct {
	Result *core.Result `json:"result,omitempty"`
	Error  *wireError   `json:"error,omitempty"`
}

// wireError is a platform error or refusal that crossed the queue: its
// core.Code and message.
type wireError struct {
	Code    core.Code `json:"code"`
	Message string    `json:"message"`
}

// toWire encodes an error from the engine.
func toWire(err error) *wireError {
	return &wireError{Code: core.CodeOf(err), Message: err.Error()}
}

// fromWire decodes an error reported by a worker; it carries the worker's
// code, so errors.Is(err, core.ErrBusy) and the like work across the queue.
func fromWire(w *wireError) error {
	code := w.Code
	if code == "" {
		code = core.ErrInternal
	}
	return core.E("worker", code, errors.New(w.Message))
}
