package wire

import (
	"encoding/json"
	"time"
)

// CreateEnvironmentRequest is the body of POST /v1/environments (admin
// keys): the spec, as the YAML file's fields in JSON, and the bytes of the
// wheels and files it names (the API never names paths on the server).
type CreateEnvironmentRequest struct {
	// Spec is the environment's spec: name, base, apt, pip, wheels,
	// index_url, files, env, check_imports, check_commands, egress.
	Spec json.RawMessage `json:"spec"`
	// Wheels are the wheel files of the spec's wheels folder.
	Wheels []EnvironmentBlob `json:"wheels,omitempty"`
	// Files are the spec's files, each by its absolute path in the image.
	Files []EnvironmentBlob `json:"files,omitempty"`
}

// EnvironmentBlob is one wheel (Name: its file name) or file (Name: its
// absolute path in the image) of a build, its bytes base64 in JSON.
type EnvironmentBlob struct {
	Name       string `json:"name"`
	Content    []byte `json:"content"`
	Executable bool   `json:"executable,omitempty"`
}

// EnvironmentCheck is the outcome of one check of a built image.
type EnvironmentCheck struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// Environment is an environment as GET /v1/environments[/{name}] and POST
// answer it: a built-in one (python, shell) or a custom one with its
// latest build.
type Environment struct {
	Name    string `json:"name"`
	Builtin bool   `json:"builtin,omitempty"`
	Base    string `json:"base,omitempty"`
	// Status is building, ready or failed.
	Status string `json:"status"`
	// Hash is the content hash of the image calls use; Image its tag.
	Hash  string `json:"hash,omitempty"`
	Image string `json:"image,omitempty"`
	// Packages lists what the spec installed, with versions.
	Packages     []string `json:"packages,omitempty"`
	SizeBytes    int64    `json:"size_bytes,omitempty"`
	AddedBytes   int64    `json:"added_bytes,omitempty"`
	BuildSeconds float64  `json:"build_seconds,omitempty"`
	// BuildID names the latest build (its events: GET .../events).
	BuildID    string             `json:"build_id,omitempty"`
	Checks     []EnvironmentCheck `json:"checks,omitempty"`
	FailedStep string             `json:"failed_step,omitempty"`
	Error      string             `json:"error,omitempty"`
	// Warm counts the warm containers of this environment on this server's
	// workers (0 when none, or none runs here).
	Warm    int       `json:"warm"`
	Created time.Time `json:"created,omitzero"`
	Updated time.Time `json:"updated,omitzero"`
}

// EnvironmentList is the answer of GET /v1/environments: the built-in
// environments, then the custom ones by name.
type EnvironmentList struct {
	Environments []Environment `json:"environments"`
}

// EnvironmentEvent is one event of GET /v1/environments/{name}/events
// (Server-Sent Events; the SSE event name is Type): step, log, progress,
// then done or failed (with the environment at the end).
type EnvironmentEvent struct {
	Type        string       `json:"type"`
	Time        time.Time    `json:"time"`
	Step        string       `json:"step,omitempty"`
	Line        string       `json:"line,omitempty"`
	Progress    float64      `json:"progress,omitempty"`
	Error       string       `json:"error,omitempty"`
	Environment *Environment `json:"environment,omitempty"`
}
