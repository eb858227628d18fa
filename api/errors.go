package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/sandbox"
)

// Stable error codes of the {"error": {"code", ...}} body.
const (
	CodeBadRequest   = "bad_request"  // 400 malformed request
	CodeUnauthorized = "unauthorized" // 401 missing or unknown key
	CodeNotFound     = "not_found"    // 404 unknown route or resource (or another key's)
	CodeConflict     = "conflict"     // 409 resource state forbids it
	CodeSessionLost  = "session_lost" // 409 the worker holding the session is gone
	CodeTooLarge     = "too_large"    // 413 body, upload or file over its limit
	CodeRateLimited  = "rate_limited" // 429 the key's token bucket is empty
	CodeBusy         = "busy"         // 429 concurrency or capacity limit
	CodeInternal     = "internal"     // 500 platform bug or failure
	CodeUnavailable  = "unavailable"  // 503 Docker, Redis or workers unreachable
	CodeNotReady     = "not_ready"    // 503 a readiness check failed
	CodeNoModel      = "no_model"     // 503 no model endpoint configured
	CodeDeadline     = "deadline"     // 504 the route's timeout passed
)

// Internal constants of the error answers.
const (
	retryAfterBusy   = 1 // seconds suggested after a busy answer
	noModelHelp      = "no model is configured: set OPENAI_BASE_URL, OPENAI_API_KEY and AIRLOCK_MODEL (or the --base-url and --model flags; --api-key-env names another variable for the key) and restart airlock serve"
	maxBytesErrorMsg = "request body is over the size limit"
)

// Error is an HTTP error answer: status, stable code, message and optional
// details. It is also a Go error so handlers can return it.
type Error struct {
	Status     int            `json:"-"`
	Code       string         `json:"code"`
	Message    string         `json:"message"`
	Details    map[string]any `json:"details,omitempty"`
	RetryAfter int            `json:"-"` // seconds, for 429 and 503
}

// Error implements error.
func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// errorBody is the JSON envelope of every error answer.
type errorBody struct {
	Error *Error `json:"error"`
}

// newError builds an Error.
func newError(status int, code, msg string) *Error {
	return &Error{Status: status, Code: code, Message: msg}
}

// withDetails returns e with details set.
func (e *Error) withDetails(d map[string]any) *Error {
	e.Details = d
	return e
}

// abortError writes e as the answer and stops the handler chain.
func abortError(c *gin.Context, e *Error) {
	if e.RetryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	c.Set(ctxErrorCode, e.Code)
	c.AbortWithStatusJSON(e.Status, errorBody{Error: e})
}

// fail maps err to an Error (see toError) and writes it.
func fail(c *gin.Context, err error) {
	abortError(c, toError(c.Request.Context(), err))
}

// toError maps a Go error to an HTTP error: an *Error as is, body limits to
// 413, the route deadline to 504, and the sandbox and dispatcher sentinels
// to their codes. Anything else is a 500 that does not leak the message.
func toError(ctx context.Context, err error) *Error {
	var e *Error
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &mbe):
		return newError(http.StatusRequestEntityTooLarge, CodeTooLarge, maxBytesErrorMsg).
			withDetails(map[string]any{"limit_bytes": mbe.Limit})
	case errors.Is(err, context.DeadlineExceeded) || (ctx != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)):
		return newError(http.StatusGatewayTimeout, CodeDeadline, "the request did not finish before its deadline")
	case errors.Is(err, sandbox.ErrSessionNotFound), errors.Is(err, dispatcher.ErrSessionNotFound):
		return newError(http.StatusNotFound, CodeNotFound, "session not found")
	case errors.Is(err, dispatcher.ErrSessionLost):
		return newError(http.StatusConflict, CodeSessionLost, "the worker holding the session is gone; open a new session")
	case errors.Is(err, sandbox.ErrBusy), errors.Is(err, dispatcher.ErrBusy):
		e := newError(http.StatusTooManyRequests, CodeBusy, "the server is busy; retry later")
		e.RetryAfter = retryAfterBusy
		return e
	case errors.Is(err, sandbox.ErrTooLarge):
		return newError(http.StatusRequestEntityTooLarge, CodeTooLarge, "file is over the size limit")
	case errors.Is(err, sandbox.ErrFile):
		return newError(http.StatusBadRequest, CodeBadRequest, "file operation refused: "+err.Error())
	case errors.Is(err, sandbox.ErrRejected):
		return newError(http.StatusBadRequest, CodeBadRequest, "request refused: "+err.Error())
	case errors.Is(err, sandbox.ErrUnavailable), errors.Is(err, sandbox.ErrImageMissing),
		errors.Is(err, dispatcher.ErrUnavailable), errors.Is(err, dispatcher.ErrNoExecutor):
		e := newError(http.StatusServiceUnavailable, CodeUnavailable, "the execution backend is unavailable")
		e.RetryAfter = 5
		return e
	}
	return newError(http.StatusInternalServerError, CodeInternal, "internal error")
}
