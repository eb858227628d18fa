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
)

// Code is one of the API's stable error codes (the "code" of an error body).
type Code string

// The API's error codes and the HTTP status each comes with.
const (
	CodeBadRequest   Code = "bad_request"  // 400 malformed request
	CodeUnauthorized Code = "unauthorized" // 401 missing or unknown key
	CodeNotFound     Code = "not_found"    // 404 unknown route or resource (or another key's)
	CodeConflict     Code = "conflict"     // 409 the resource's state forbids it
	CodeSessionLost  Code = "session_lost" // 409 the worker holding the session is gone
	CodeTooLarge     Code = "too_large"    // 413 body, upload or file over its limit
	CodeRateLimited  Code = "rate_limited" // 429 the key's request rate is over its limit
	CodeBusy         Code = "busy"         // 429 concurrency or capacity limit
	CodeQuota        Code = "quota"        // 429 the owner's budget (sessions, memory, bytes) is spent
	CodeInternal     Code = "internal"     // 500 platform failure
	CodeUnavailable  Code = "unavailable"  // 503 Docker, Redis or workers unreachable
	CodeNotReady     Code = "not_ready"    // 503 a readiness check failed
	CodeNoModel      Code = "no_model"     // 503 no model endpoint configured
	CodeDeadline     Code = "deadline"     // 504 the route's timeout passed
)

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 1 << 20

// APIError is an error answer of the API: the HTTP status, the stable
// error code, the message, the code-specific details and, for 429 and 503
// answers, how long the server asked the caller to wait.
type APIError struct {
	// StatusCode is the HTTP status, e.g. 404.
	StatusCode int
	// Code is the API's error code, e.g. CodeNotFound; empty when the
	// answer had no error body (a proxy's answer, say).
	Code Code
	// Message is the server's human-readable explanation.
	Message string
	// Details are code-specific; a tool call's error carries "status" and
	// "tool_message".
	Details map[string]any
	// RetryAfter is the Retry-After header; 0 when absent.
	RetryAfter time.Duration
	// Method and Path name the request that failed.
	Method, Path string
}

// Error implements error.
func (e *APIError) Error() string {
	code := string(e.Code)
	if code == "" {
		code = http.StatusText(e.StatusCode)
	}
	return fmt.Sprintf("airlock: %s %s: %d %s: %s", e.Method, e.Path, e.StatusCode, code, e.Message)
}

// Temporary reports whether retrying later may succeed: rate limited,
// busy, over quota, unavailable, not ready or past a deadline.
func (e *APIError) Temporary() bool {
	switch e.Code {
	case CodeRateLimited, CodeBusy, CodeQuota, CodeUnavailable, CodeNotReady, CodeDeadline:
		return true
	}
	return false
}

// HasCode reports whether err is (or wraps) an *APIError with code.
func HasCode(err error, code Code) bool {
	var e *APIError
	return errors.As(err, &e) && e.Code == code
}

// errorEnvelope is the JSON body of every error answer.
type errorEnvelope struct {
	Error *struct {
		Code    Code           `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	} `json:"error"`
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
	var env errorEnvelope
	if json.Unmarshal(body, &env) == nil && env.Error != nil {
		e.Code, e.Message, e.Details = env.Error.Code, env.Error.Message, env.Error.Details
	} else {
		e.Message = strings.TrimSpace(string(body))
		if len(e.Message) > 200 {
			e.Message = e.Message[:200] + "…"
		}
	}
	return e
}
