package wire

import "github.com/airlock-dev/airlock/core"

// Error is the error object of every error answer: a stable code (the
// platform's core.Code), a message for people and code-specific details.
type Error struct {
	Code    core.Code      `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// ErrorBody is the JSON body of every error answer.
type ErrorBody struct {
	Error *Error `json:"error"`
}

// CallStreamError is the data of the "error" event that ends a streamed
// tool call: the HTTP status and error the non-streaming call answers with.
type CallStreamError struct {
	Status int    `json:"status"`
	Error  *Error `json:"error"`
}
