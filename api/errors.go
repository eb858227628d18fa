package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/toolcalls"
	"github.com/airlock-dev/airlock/wire"
)

// httpStatus is the one place where a platform error code becomes an HTTP
// status. Codes are core's (core.Codes); an unknown code is a 500.
func httpStatus(code core.Code) int {
	switch code {
	case core.ErrInvalid:
		return http.StatusBadRequest
	case core.ErrUnauthorized:
		return http.StatusUnauthorized
	case core.ErrForbidden:
		return http.StatusForbidden
	case core.ErrNotFound:
		return http.StatusNotFound
	case core.ErrConflict, core.ErrSessionLost:
		return http.StatusConflict
	case core.ErrTooLarge:
		return http.StatusRequestEntityTooLarge
	case core.ErrRateLimited, core.ErrBusy, core.ErrQuota:
		return http.StatusTooManyRequests
	case core.ErrUnavailable, core.ErrNotReady, core.ErrNoModel:
		return http.StatusServiceUnavailable
	case core.ErrDeadline:
		return http.StatusGatewayTimeout
	case core.ErrCanceled:
		return 499 // the client closed the request; nobody reads the answer
	}
	return http.StatusInternalServerError
}

// retryAfter is the Retry-After (seconds) suggested with a code, 0 for none.
// A spent quota (snapshot bytes, sessions, memory) has none: it does not
// free itself, so waiting a second would not help (a budget that does,
// like concurrent calls, sets its own).
func retryAfter(code core.Code) int {
	switch code {
	case core.ErrBusy:
		return retryAfterBusy
	case core.ErrUnavailable:
		return 5
	}
	return 0
}

// Internal constants of the error answers.
const (
	retryAfterBusy   = 1 // seconds suggested after a busy answer
	noModelHelp      = "no model is configured: set OPENAI_BASE_URL, OPENAI_API_KEY and AIRLOCK_MODEL (or the --base-url and --model flags; --api-key-env names another variable for the key) and restart airlock serve"
	maxBytesErrorMsg = "request body is over the size limit"
)

// Error is an HTTP error answer: the body's error object (code, message,
// details), the status and Retry-After. It is also a Go error so handlers
// can return it.
type Error struct {
	errorObject
	Status     int
	RetryAfter int // seconds, for 429 and 503
}

// errorObject is the error object of an answer, embedded in Error under
// a name that leaves Error its Error method.
type errorObject = wire.Error

// Error implements error.
func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// body is the JSON body of the answer.
func (e *Error) body() wire.ErrorBody { return wire.ErrorBody{Error: &e.errorObject} }

// newError builds an Error for code, with the code's status and Retry-After.
func newError(code core.Code, msg string) *Error {
	return &Error{errorObject: wire.Error{Code: code, Message: msg}, Status: httpStatus(code), RetryAfter: retryAfter(code)}
}

// withDetails returns e with details set.
func (e *Error) withDetails(d map[string]any) *Error {
	e.Details = d
	return e
}

// abortError writes e as the answer and stops the handler chain.
func abortError(c *gin.Context, e *Error) {
	c.Set(ctxErrorCode, e.Code)
	c.Abort()
	writeError(c.Writer, e)
}

// writeError writes e as the answer on w, with its Retry-After.
func writeError(w http.ResponseWriter, e *Error) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(e.body())
}

// fail maps err to an Error (see toError) and writes it.
func fail(c *gin.Context, err error) {
	abortError(c, toError(c.Request.Context(), err))
}

// toError maps a Go error to an HTTP error: an *Error as is, body limits to
// 413, the route deadline to 504, and everything else by the core.Code it
// carries. The message of a refusal (bad request, not found, too large,
// conflict, quota) is the error's own, with the details an error in its
// chain gives (ErrorDetails); platform failures get a fixed text, so
// nothing internal leaks.
func toError(ctx context.Context, err error) *Error {
	e := codeError(ctx, err)
	var d interface{ ErrorDetails() map[string]any }
	if e.Details == nil && errors.As(err, &d) {
		e.Details = d.ErrorDetails()
	}
	return e
}

// codeError is toError without the details.
func codeError(ctx context.Context, err error) *Error {
	var e *Error
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &mbe):
		return newError(core.ErrTooLarge, maxBytesErrorMsg).
			withDetails(map[string]any{"limit_bytes": mbe.Limit})
	case errors.Is(err, context.DeadlineExceeded) || (ctx != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)):
		return newError(core.ErrDeadline, "the request did not finish before its deadline")
	}
	code := core.CodeOf(err)
	switch code {
	case core.ErrInvalid, core.ErrForbidden, core.ErrNotFound, core.ErrConflict, core.ErrTooLarge, core.ErrQuota, core.ErrNoModel:
		return newError(code, messageOf(err))
	case core.ErrSessionLost:
		return newError(code, "the worker holding the session is gone; open a new session")
	case core.ErrBusy:
		return newError(code, "the server is busy; retry later")
	case core.ErrUnavailable:
		return newError(code, "the execution backend is unavailable")
	case core.ErrCanceled:
		return newError(code, "the client went away")
	}
	return newError(core.ErrInternal, "internal error")
}

// messageOf is the client-facing text of a refusal: the innermost
// core.Error's message (without operation prefixes), else the error text.
func messageOf(err error) string {
	msg := err.Error()
	for e := err; e != nil; {
		var ce *core.Error
		if !errors.As(e, &ce) {
			break
		}
		msg = ce.Message()
		e = ce.Err
	}
	return msg
}

// statusError is the HTTP error of a platform outcome of the dispatcher
// (toolcalls.Failure), nil for an answer (HTTP 200); it carries the tool
// message in its details, for callers that hand it to a model.
func statusError(res dispatcher.Result, msg wire.ToolMessage) *Error {
	err := toolcalls.Failure(res)
	if err == nil {
		return nil
	}
	return newError(core.CodeOf(err), messageOf(err)).withDetails(map[string]any{"status": string(res.Status), "tool_message": msg})
}
