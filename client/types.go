package client

import (
	"encoding/json"
	"mime"
	"net/http"
	"time"
)

// Health is the answer of GET /healthz.
type Health struct {
	Status string `json:"status"` // "ok"
}

// Readiness is the answer of GET /readyz: "ready" and each check's state.
type Readiness struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"`
}

// Info is the answer of GET /v1/info.
type Info struct {
	AuthRequired    bool     `json:"auth_required"`
	ModelConfigured bool     `json:"model_configured"`
	ModelHelp       string   `json:"model_help,omitempty"`
	Sessions        bool     `json:"sessions"`
	MaxUploadBytes  int64    `json:"max_upload_bytes"`
	Inputs          []string `json:"inputs"`
}

// Tool is one entry of the tool registry, in OpenAI's tools format.
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

// Limits lower the server's defaults for one call or session; zero fields
// keep the default.
type Limits struct {
	MemoryBytes    int64   `json:"memory_bytes,omitempty"`
	CPUs           float64 `json:"cpus,omitempty"`
	Pids           int64   `json:"pids,omitempty"`
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	OutputBytes    int64   `json:"output_bytes,omitempty"`
	TmpfsBytes     int64   `json:"tmpfs_bytes,omitempty"`
	Nofile         int64   `json:"nofile,omitempty"`
	FileSizeBytes  int64   `json:"file_size_bytes,omitempty"`
}

// ToolCall is an OpenAI tool call to run.
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
	Limits *Limits
}

// toolCallBody is the wire form of a ToolCall.
type toolCallBody struct {
	ID       string `json:"id,omitempty"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments any    `json:"arguments,omitempty"`
	} `json:"function"`
	Input  string  `json:"input,omitempty"`
	Limits *Limits `json:"limits,omitempty"`
}

// wire converts c to its request body.
func (c ToolCall) wire() toolCallBody {
	b := toolCallBody{ID: c.ID, Type: "function", Input: c.Input, Limits: c.Limits}
	b.Function.Name, b.Function.Arguments = c.Name, c.Arguments
	return b
}

// ToolMessage is the role "tool" message to hand back to the model.
type ToolMessage struct {
	Role       string `json:"role"` // "tool"
	ToolCallID string `json:"tool_call_id"`
	Content    string `json:"content"`
}

// Artifact is a file a call produced. URL is empty when the server did not
// keep the bytes.
type Artifact struct {
	ID     string `json:"id,omitempty"`
	Name   string `json:"name"`
	MIME   string `json:"mime"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	URL    string `json:"url,omitempty"`
}

// Result statuses of a tool call (ToolResult.Status).
const (
	StatusOK              = "ok"
	StatusError           = "error"
	StatusTimeout         = "timeout"
	StatusOOM             = "oom"
	StatusOutputLimit     = "output_limit"
	StatusRejected        = "rejected"
	StatusPendingApproval = "pending_approval"
)

// ToolResult is the structured outcome of a tool call.
type ToolResult struct {
	ToolCallID    string            `json:"tool_call_id"`
	Name          string            `json:"name"`
	Status        string            `json:"status"`
	Reason        string            `json:"reason,omitempty"`
	Fields        map[string]string `json:"fields,omitempty"`
	ApprovalToken string            `json:"approval_token,omitempty"`
	DurationMS    int64             `json:"duration_ms"`
	ExitCode      *int              `json:"exit_code,omitempty"`
	Stdout        string            `json:"stdout"`
	Stderr        string            `json:"stderr"`
	Truncated     bool              `json:"truncated"`
	Message       string            `json:"message,omitempty"`
	Warnings      []string          `json:"warnings,omitempty"`
	Artifacts     []Artifact        `json:"artifacts"`
	SessionID     string            `json:"session_id,omitempty"`
	SessionEnded  bool              `json:"session_ended,omitempty"`
	// Error is the exception the code raised (Python), if any.
	Error *ExecError `json:"error,omitempty"`
	// ExecutionCount numbers the calls of a Python session (1, 2, ...).
	ExecutionCount int `json:"execution_count,omitempty"`
	// Display holds the rich outputs: the last expression's value and
	// display() calls, each a MIME bundle.
	Display []Display `json:"display,omitempty"`
	// Dropped counts output bytes left out of Stdout and Stderr (the
	// middle of a stream past its cap); nil when nothing was dropped.
	Dropped *Dropped `json:"dropped,omitempty"`
	// KernelRestarted says the session's Python process died during the
	// call and was replaced: variables are gone, files are kept.
	KernelRestarted bool `json:"kernel_restarted,omitempty"`
}

// ExecError is an exception the user's code raised: its class name, its
// message and the formatted traceback lines.
type ExecError struct {
	Name      string   `json:"name"`
	Value     string   `json:"value"`
	Traceback []string `json:"traceback"`
}

// Display is one rich output: a MIME bundle keyed by media type
// ("text/plain", "text/html", "image/png" as base64, ...).
type Display struct {
	Data map[string]string `json:"data"`
}

// Dropped counts the output bytes left out of a result's streams.
type Dropped struct {
	Stdout int64 `json:"stdout"`
	Stderr int64 `json:"stderr"`
}

// ToolCallResponse is the answer of a tool call: the message for the model
// and the structured result, whatever the code did.
type ToolCallResponse struct {
	Message ToolMessage `json:"message"`
	Result  ToolResult  `json:"result"`
}

// Session is the record of a session: one sandbox keeping state.
type Session struct {
	ID       string    `json:"id"`
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used"`
	// ExpiresAt is when the session ends unless it is used again.
	ExpiresAt time.Time `json:"expires_at"`
	// Background says whether processes its calls start may outlive the
	// calls (asked for at creation; the key's policy must allow it).
	Background bool `json:"background"`
	// The fields below are filled by GetSession, ListSessions and
	// RestartSession, not by CreateSession.

	// CreatedAt and LastUsedAt repeat Created and LastUsed.
	CreatedAt  time.Time `json:"created_at,omitzero"`
	LastUsedAt time.Time `json:"last_used_at,omitzero"`
	// AgeSeconds is how long the session has existed.
	AgeSeconds float64 `json:"age_seconds,omitempty"`
	// State is SessionIdle, SessionBusy or SessionUnknown (the sandbox did
	// not answer in time; the live fields are then nil).
	State string `json:"state,omitempty"`
	// ExecutionCount is the number of calls the session has run.
	ExecutionCount *int `json:"execution_count,omitempty"`
	// CPUMS is the CPU time the session's sandbox has used, in milliseconds.
	CPUMS *float64 `json:"cpu_ms,omitempty"`
	// MemBytes is the sandbox's current memory use.
	MemBytes *int64 `json:"mem_bytes,omitempty"`
}

// Session states (Session.State).
const (
	SessionIdle    = "idle"
	SessionBusy    = "busy"
	SessionUnknown = "unknown"
)

// SessionOptions configure a new session; the zero value takes the
// server's defaults.
type SessionOptions struct {
	// Limits lower the server's defaults for the session; nil keeps them.
	Limits *Limits `json:"limits,omitempty"`
	// Background lets processes the session's calls start keep running
	// after each call returns; the key's policy must allow it (else 400).
	Background bool `json:"background,omitempty"`
}

// FileWritten is the answer of a file upload.
type FileWritten struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
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

// RunRequest starts an agent run: exactly one of Goal or Messages.
type RunRequest struct {
	Goal      string            `json:"goal,omitempty"`
	Messages  []json.RawMessage `json:"messages,omitempty"`
	Model     string            `json:"model,omitempty"`
	MaxSteps  int               `json:"max_steps,omitempty"`
	SessionID string            `json:"session_id,omitempty"`
	Input     string            `json:"input,omitempty"`
}

// Usage counts a run's tokens and time.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	ToolSchemaTokens int64 `json:"tool_schema_tokens"`
	ModelMS          int64 `json:"model_ms"`
	ToolMS           int64 `json:"tool_ms"`
}

// Run states (Run.Status); every state but running and waiting_approval
// is final.
const (
	RunRunning         = "running"
	RunWaitingApproval = "waiting_approval"
	RunDone            = "done"
	RunCancelled       = "cancelled"
	RunFailed          = "failed"
)

// Run is an agent run's state.
type Run struct {
	ID               string     `json:"id"`
	Status           string     `json:"status"`
	Steps            int        `json:"steps"`
	Usage            Usage      `json:"usage"`
	FinalAnswer      string     `json:"final_answer,omitempty"`
	Error            string     `json:"error,omitempty"`
	Created          time.Time  `json:"created"`
	Ended            *time.Time `json:"ended,omitempty"`
	PendingApprovals []string   `json:"pending_approvals,omitempty"`
}

// Event types of a run's stream (Event.Type).
const (
	EventStepStarted      = "step_started"
	EventAssistantMessage = "assistant_message"
	EventToolCall         = "tool_call"
	EventToolResult       = "tool_result"
	EventApprovalNeeded   = "approval_needed"
	EventFinalAnswer      = "final_answer"
	EventError            = "error"
	EventRunFinished      = "run_finished"
)

// Event is one event of a run.
type Event struct {
	Seq  int64           `json:"seq"`
	Type string          `json:"type"`
	Time time.Time       `json:"time"`
	Step int             `json:"step"`
	Data json.RawMessage `json:"data"`
}
