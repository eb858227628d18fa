package dispatcher

import (
	"context"
	"encoding/json"

	"github.com/airlock-dev/airlock/core"
)

// Call is one tool call as a model (or any other caller) wrote it.
// Arguments may be a JSON string holding an object (OpenAI's wire form) or
// the object itself; Run accepts both.
type Call struct {
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Caller context, set by the transport, never by the model.
	Owner     string `json:"owner,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	Mount     string `json:"mount,omitempty"` // host folder, already authorised by the caller
	// MountName is the name clients know Mount by (an input folder's
	// name). The host path never reaches a client: where a result quotes
	// it, it becomes "input folder NAME" (or "the input folder").
	MountName string `json:"mount_name,omitempty"`
	// Archive travels as core.Request.Archive (set by the transport, e.g.
	// a batch map item): packed input files unpacked into /workspace
	// inside the sandbox. Exclusive with Mount.
	Archive []byte      `json:"archive,omitempty"`
	Limits  core.Limits `json:"limits,omitempty"` // lowers the server defaults
	// Ceiling, set by the transport from the caller's policy, replaces
	// Config.Ceiling field by field where set: it may grant more than the
	// defaults (the sandbox still refuses anything over its maximum).
	Ceiling core.Limits `json:"ceiling,omitempty"`
	// Background is set on calls in a session opened with background work
	// allowed; it travels as core.Request.Background.
	Background bool `json:"background,omitempty"`
	// AllowStdin lets a session call's input() ask the caller (it travels
	// as core.Request.AllowStdin; the caller answers with OpSessionInput).
	AllowStdin bool `json:"allow_stdin,omitempty"`
	// Notebook runs the call with a notebook front end's conventions (it
	// travels as core.Request.Notebook).
	Notebook bool   `json:"notebook,omitempty"`
	Caller   string `json:"caller,omitempty"` // "api", "agent", "cli", "mcp"... for the audit log
	// Lane and IdempotencyKey travel as core.Request.Lane and
	// core.Request.IdempotencyKey (set by the transport: batch items use
	// core.LaneBatch; the API keys a tool call by its Idempotency-Key
	// header or call id).
	Lane           core.Lane `json:"lane,omitempty"`
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	// ApprovalTools and RequireApproval, set by the transport from the
	// caller's policy, add to Config.ApprovalTools and
	// PolicyConfig.RequireApproval for this call: a tool named here waits
	// for approval, a rule named here holds the call instead of refusing.
	ApprovalTools   []string `json:"approval_tools,omitempty"`
	RequireApproval []string `json:"require_approval,omitempty"`
}

// Status is a tool call's outcome: the sandbox statuses plus the
// dispatcher's own.
type Status string

// Outcomes of Run. The first six mirror sandbox.Status.
const (
	StatusOK              Status = "ok"
	StatusError           Status = "error"
	StatusTimeout         Status = "timeout"
	StatusOOM             Status = "oom"
	StatusOutputLimit     Status = "output_limit"
	StatusRejected        Status = "rejected"         // unknown tool, bad arguments, policy
	StatusPendingApproval Status = "pending_approval" // see Approve / Reject
	StatusBusy            Status = "busy"             // admission refused; try later
	StatusSessionNotFound Status = "session_not_found"
	StatusSessionLost     Status = "session_lost" // the worker holding the session is gone
	StatusUnavailable     Status = "unavailable"  // Docker or Redis unreachable
	StatusInternal        Status = "internal"     // a platform bug or failure
)

// Result is the answer to one Call. Content is the text to hand back to the
// model as the role "tool" message; it is already redacted and truncated.
type Result struct {
	CallID  string `json:"tool_call_id"`
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Content string `json:"content"`
	// Reason is a machine-readable refusal code (e.g. "unknown_tool",
	// "invalid_json", "invalid_arguments", "policy:shell.rm_root").
	Reason string `json:"reason,omitempty"`
	// Fields lists argument errors by JSON pointer, for invalid_arguments.
	Fields map[string]string `json:"fields,omitempty"`
	// Sandbox is the redacted execution result, when something ran.
	Sandbox *core.Result `json:"result,omitempty"`
	// ApprovalToken is set with StatusPendingApproval.
	ApprovalToken string `json:"approval_token,omitempty"`
	DurationMS    int64  `json:"duration_ms"`
	// Err is the platform error behind StatusBusy, StatusUnavailable,
	// StatusInternal, StatusSessionLost and StatusSessionNotFound, for
	// errors.Is/As by transports. Never serialised.
	Err error `json:"-"`
}

// Executor runs a sandbox request somewhere: directly on a sandbox engine,
// or through the queue on a worker. Returned errors are platform failures.
type Executor interface {
	Exec(ctx context.Context, req core.Request) (core.Result, error)
}
