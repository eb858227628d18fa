package wire

import (
	"encoding/json"

	"github.com/airlock-dev/airlock/core"
)

// Limits lower the server's defaults for one call or session; zero fields
// keep the default. A value over the key's ceiling is refused with 400.
type Limits struct {
	MemoryBytes    int64   `json:"memory_bytes,omitempty"`
	CPUs           float64 `json:"cpus,omitempty"`
	Pids           int64   `json:"pids,omitempty"`
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	OutputBytes    int     `json:"output_bytes,omitempty"`
	TmpfsBytes     int64   `json:"tmpfs_bytes,omitempty"`
	NoFile         int64   `json:"nofile,omitempty"`
	FileSizeBytes  int64   `json:"file_size_bytes,omitempty"`
}

// ToolCallRequest is the body of POST /v1/tool-calls and POST
// /v1/sessions/{id}/tool-calls: an OpenAI tool call plus the caller's
// context.
type ToolCallRequest struct {
	// ID is the model's tool_call id; the server generates one when empty.
	ID    string `json:"id,omitempty"`
	Type  string `json:"type,omitempty"`  // "function"
	Index *int   `json:"index,omitempty"` // accepted from streamed deltas, ignored
	// Function names the tool and carries its arguments.
	Function ToolCallFunction `json:"function"`
	// SessionID runs the call in that session (POST /v1/tool-calls only).
	SessionID string `json:"session_id,omitempty"`
	// Input names an input folder the operator allowed (mounted read-only).
	Input  string  `json:"input,omitempty"`
	Limits *Limits `json:"limits,omitempty"`
	// Environment names the environment the call runs in (default
	// python, shell for execute_shell); a session call runs in its
	// session's.
	Environment string `json:"environment,omitempty"`
	// Notebook runs the call with a notebook front end's conventions
	// (core.Request.Notebook): the last expression's value is sent once,
	// as a display marked "result" holding its richest representations
	// with a text/plain fallback, instead of printed and displayed;
	// figures come as image/png displays.
	Notebook bool `json:"notebook,omitempty"`
}

// ToolCallFunction is the tool and its arguments: a JSON object, or a
// string holding one (OpenAI's wire form).
type ToolCallFunction struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ToolMessage is the role "tool" message to hand back to the model.
type ToolMessage struct {
	Role       string `json:"role"` // "tool"
	ToolCallID string `json:"tool_call_id"`
	Content    string `json:"content"`
}

// Artifact is a file a call produced: its metadata and the URL of its
// bytes. URL is empty, and Error says why, when the bytes were not kept.
type Artifact struct {
	ID     string `json:"id,omitempty"`
	Name   string `json:"name"`
	MIME   string `json:"mime"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	URL    string `json:"url,omitempty"`
	// Error says why the bytes were not kept: quota (the key's artifact
	// quota is full), too_large, busy (the store is full) or unavailable.
	Error *Error `json:"error,omitempty"`
}

// StatusPendingApproval is ToolResult.Status for a call held for a human's
// approval; every other status is one of core.Status's outcomes.
const StatusPendingApproval core.Status = "pending_approval"

// ToolResult is the structured outcome of a tool call, whatever the code
// did.
type ToolResult struct {
	ToolCallID string      `json:"tool_call_id"`
	Name       string      `json:"name"`
	Status     core.Status `json:"status"`
	// Reason is a machine-readable refusal code (unknown_tool,
	// invalid_arguments, policy:...); Fields names bad arguments.
	Reason        string            `json:"reason,omitempty"`
	Fields        map[string]string `json:"fields,omitempty"`
	ApprovalToken string            `json:"approval_token,omitempty"`
	DurationMS    int64             `json:"duration_ms"`
	// ExitCode is nil when nothing ran (a refusal).
	ExitCode  *int       `json:"exit_code,omitempty"`
	Stdout    string     `json:"stdout"`
	Stderr    string     `json:"stderr"`
	Truncated bool       `json:"truncated"`
	Message   string     `json:"message,omitempty"`
	Warnings  []string   `json:"warnings,omitempty"`
	Artifacts []Artifact `json:"artifacts"`
	SessionID string     `json:"session_id,omitempty"`
	// SessionEnded says the call's session is gone.
	SessionEnded bool `json:"session_ended,omitempty"`
	// Error is the exception that ended the code, as data.
	Error *core.ExecError `json:"error,omitempty"`
	// ExecutionCount numbers the session's calls (1 for a one-shot call).
	ExecutionCount int `json:"execution_count,omitempty"`
	// Display holds rich outputs (MIME bundles) in the order produced.
	Display []core.Display `json:"display,omitempty"`
	// Dropped counts output bytes cut from the middle of each stream; nil
	// when nothing ran.
	Dropped *core.Dropped `json:"dropped,omitempty"`
	// KernelRestarted says the session's Python process died or was
	// replaced during the call: variables are gone, files are kept.
	KernelRestarted bool `json:"kernel_restarted,omitempty"`
	// Network lists every connection the call attempted through the
	// egress proxy (or fetch_url's hops), allowed or refused (issue 29).
	Network []core.NetworkAttempt `json:"network,omitempty"`
	// Resumed says the session had lost its container (hibernated, or its
	// worker stopped or died) and was restored from its last snapshot into
	// a fresh one before this call ran (issue 30); WakeMS is how long that
	// took, ResumeSkipped the names the snapshot could not save (they are
	// missing now).
	Resumed       bool           `json:"resumed,omitempty"`
	WakeMS        int64          `json:"wake_ms,omitempty"`
	ResumeSkipped []SnapshotSkip `json:"resume_skipped,omitempty"`
}

// ToolCallResponse is the 200 answer of a tool call (and the data of a
// streamed call's "result" event): the message for the model and the
// structured result.
type ToolCallResponse struct {
	Message ToolMessage `json:"message"`
	Result  ToolResult  `json:"result"`
}

// CallEvent is one live event of a streamed tool call (SSE events
// "stdout", "stderr", "display" and "artifact"); the final result still
// carries everything.
type CallEvent struct {
	Kind string `json:"kind"` // core.EventStdout, EventStderr, EventDisplay or EventArtifact
	// Text is the output chunk of a stdout or stderr event.
	Text string `json:"text,omitempty"`
	// Data is the MIME bundle of a display event.
	Data map[string]string `json:"data,omitempty"`
	// Artifact names the file of an artifact event (no URL: the result
	// event has it).
	Artifact *Artifact `json:"artifact,omitempty"`
}
