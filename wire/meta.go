package wire

import "encoding/json"

// Health is the answer of GET /healthz.
type Health struct {
	Status string `json:"status"` // "ok"
}

// Readiness is the answer of GET /readyz: "ready" and each check's state
// ("ok", "unavailable").
type Readiness struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"`
}

// Info is the answer of GET /v1/info (no key needed): what a client needs
// to know before it calls.
type Info struct {
	AuthRequired    bool   `json:"auth_required"`
	ModelConfigured bool   `json:"model_configured"`
	ModelHelp       string `json:"model_help,omitempty"` // how to configure a model, when none is
	Sessions        bool   `json:"sessions"`
	MaxUploadBytes  int64  `json:"max_upload_bytes"`
	// Inputs are the names of the input folders a call may mount.
	Inputs []string `json:"inputs"`
}

// Tools is the answer of GET /v1/tools: the registry in OpenAI's tools
// format, ready for a chat completion request.
type Tools struct {
	Tools []Tool `json:"tools"`
}

// Tool is one tool of the registry.
type Tool struct {
	Type     string       `json:"type"` // "function"
	Function ToolFunction `json:"function"`
}

// ToolFunction describes a tool: its name, description and the JSON
// Schema of its arguments.
type ToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}
