package client

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"

	"github.com/airlock-dev/airlock/wire"
)

// ToolCall is a tool call to send: its wire form, a wire.ToolCallRequest,
// with the arguments as any Go value.
type ToolCall struct {
	// ID is the model's tool_call id; the server generates one when empty.
	ID string
	// Name is the tool, e.g. "run_python" or "execute_shell".
	Name string
	// Arguments are the tool's arguments: a value encoding to a JSON
	// object (a map or struct), a json.RawMessage holding one, or a string
	// holding one (OpenAI's wire form, passed through as is).
	Arguments any
	// Input names an input folder the operator allowed (mounted read-only).
	Input string
	// Limits lower the server's defaults for this call.
	Limits *wire.Limits
	// Environment names the environment the call runs in (default
	// python, shell for execute_shell).
	Environment string
}

// Request is c as the request body.
func (c ToolCall) Request() (wire.ToolCallRequest, error) {
	req := wire.ToolCallRequest{ID: c.ID, Type: "function", Input: c.Input, Limits: c.Limits, Environment: c.Environment,
		Function: wire.ToolCallFunction{Name: c.Name}}
	switch a := c.Arguments.(type) {
	case nil:
	case json.RawMessage:
		req.Function.Arguments = a
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return req, fmt.Errorf("airlock client: tool call %s: encode arguments: %w", c.Name, err)
		}
		req.Function.Arguments = b
	}
	return req, nil
}

// Download is a downloaded file or artifact.
type Download struct {
	// Data are the bytes.
	Data []byte
	// ContentType is the served media type.
	ContentType string
	// Filename is the name from Content-Disposition, if any.
	Filename string
}

// newDownload reads the metadata of res.
func newDownload(res *http.Response, data []byte) *Download {
	d := &Download{Data: data, ContentType: res.Header.Get("Content-Type")}
	if _, p, err := mime.ParseMediaType(res.Header.Get("Content-Disposition")); err == nil {
		d.Filename = p["filename"]
	}
	return d
}
