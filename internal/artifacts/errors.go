package artifacts

import (
	"fmt"

	"github.com/airlock-dev/airlock/core"
)

// NotKept says why an artifact was not kept: the code (quota, too_large,
// busy, bad_request, unavailable) and details of the API's answer, a
// message for the caller, and the failure behind it, if any.
type NotKept struct {
	Code    core.Code
	Message string
	// Details name the full quota: {"budget": "artifact_bytes" or
	// "artifact_count", "limit": N}.
	Details map[string]any
	Cause   error
}

// notKept builds a NotKept with a formatted message.
func notKept(code core.Code, cause error, format string, args ...any) *NotKept {
	return &NotKept{Code: code, Message: fmt.Sprintf(format, args...), Cause: cause}
}

// Error implements error: the message alone, fit for the caller.
func (e *NotKept) Error() string { return e.Message }

// Unwrap exposes the code and the cause to errors.Is and As.
func (e *NotKept) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Code}
	}
	return []error{e.Code, e.Cause}
}

// ErrorDetails are the details of the API's error answer.
func (e *NotKept) ErrorDetails() map[string]any { return e.Details }
