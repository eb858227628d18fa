package agent

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/openai/openai-go/v3"
)

// retryable reports whether a failed model call may be tried again: a
// connection or stream error, or an HTTP 408, 409, 429 or 5xx. parent is
// the caller's context: once it is done nothing is retried.
func retryable(parent context.Context, err error) bool {
	if err == nil || parent.Err() != nil {
		return false
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		s := apiErr.StatusCode
		return s == http.StatusRequestTimeout || s == http.StatusConflict ||
			s == http.StatusTooManyRequests || s >= 500
	}
	var perm *permanentError
	return !errors.As(err, &perm)
}

// permanentError marks a failure that retrying cannot fix.
type permanentError struct{ err error }

// Error returns the wrapped message.
func (e *permanentError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e *permanentError) Unwrap() error { return e.err }

// backoff is the wait before retry number attempt (0-based): exponential
// from base, capped at max, with jitter in [d/2, d]. A Retry-After header
// (seconds) on the error raises it, up to max.
func backoff(attempt int, base, max time.Duration, err error) time.Duration {
	d := base
	for i := 0; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	d = d/2 + rand.N(d/2+1)
	var apiErr *openai.Error
	if errors.As(err, &apiErr) && apiErr.Response != nil {
		if s, e := strconv.Atoi(apiErr.Response.Header.Get("Retry-After")); e == nil && s > 0 {
			if ra := time.Duration(s) * time.Second; ra > d {
				d = min(ra, max)
			}
		}
	}
	return d
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
