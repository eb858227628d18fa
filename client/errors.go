package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/wire"
)

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 1 << 20

// APIError is an error answer of the API: its error object (the stable
// code, a core.Code such as core.ErrNotFound, empty when the answer had no
// error body, a proxy's say; the message; the code-specific details: a
// tool call's error carries "status" and "tool_message"), the HTTP status
// and, for 429 and 503 answers, how long the server asked the caller to
// wait.
type APIError struct {
	errorObject
	// StatusCode is the HTTP status, e.g. 404.
	StatusCode int
	// RetryAfter is the Retry-After header; 0 when absent.
	RetryAfter time.Duration
	// Method and Path name the request that failed.
	Method, Path string
}

// errorObject is the error object of an answer, embedded in APIError
// under a name that leaves APIError its Error method.
type errorObject = wire.Error

// Error implements error.
func (e *APIError) Error() string {
	code := string(e.Code)
	if code == "" {
		code = http.StatusText(e.StatusCode)
	}
	return fmt.Sprintf("airlock: %s %s: %d %s: %s", e.Method, e.Path, e.StatusCode, code, e.Message)
}

// Temporary reports whether retrying the same request later may succeed
// on its own: rate limited, busy, unavailable, not ready or past a
// deadline. A quota refusal is not temporary: a quota does not free itself
// (the caller must close a session, delete artifacts or snapshots), and
// the server sends no Retry-After for it.
func (e *APIError) Temporary() bool {
	switch e.Code {
	case core.ErrRateLimited, core.ErrBusy, core.ErrUnavailable, core.ErrNotReady, core.ErrDeadline:
		return true
	}
	return false
}

// HasCode reports whether err is (or wraps) an *APIError with code.
func HasCode(err error, code core.Code) bool {
	var e *APIError
	return errors.As(err, &e) && e.Code == code
}

// readAPIError builds the *APIError of a non-2xx answer.
func readAPIError(res *http.Response) *APIError {
	e := &APIError{StatusCode: res.StatusCode, Method: res.Request.Method, Path: res.Request.URL.Path}
	if s := strings.TrimSpace(res.Header.Get("Retry-After")); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			e.RetryAfter = time.Duration(n) * time.Second
		} else if t, err := http.ParseTime(s); err == nil {
			e.RetryAfter = max(time.Until(t), 0)
		}
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	var env wire.ErrorBody
	if json.Unmarshal(body, &env) == nil && env.Error != nil {
		e.errorObject = *env.Error
	} else {
		e.Message = strings.TrimSpace(string(body))
		if len(e.Message) > 200 {
			e.Message = e.Message[:200] + "…"
		}
	}
	return e
}
