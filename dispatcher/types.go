package dispatcher

import (
	"context"
	"encoding/json"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/egress"
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
	// Egress, set by the dispatcher from Config.Egress (what a transport
	// puts here is replaced), is where the call may connect: its sandbox through the worker's egress proxy
	// (core.Request.Egress), fetch_url from Airlock. Zero: no network.
	Egress egress.Policy `json:"egress,omitzero"`
	// Environment names the environment a one-shot call runs in (issue
	// 28; default python, shell for execute_shell); a session call runs in
	// its session's. Environments, set by the transport from the caller's
	// policy, lists the custom environments the caller may use ("*": all);
	// the built-in ones are always allowed.
	Environment  string   `json:"environment,omitempty"`
	Environments []string `json:"environments,omitempty"`
}

// Status is a tool call's outcome, as the wire shows it. It is one of:
// what the code did (the core.Status values), the gate's own
// pending_approval, or, for a platform failure, the name of the failure's
// core.Code (Result.Code holds the code itself; platformStatus is the one
// place a Code becomes a Status). There is no second failure vocabulary.
type Status string

// What the code did (core.Status) and the gate's own outcomes.
const (
	StatusOK                     = Status(core.StatusOK)
	StatusError                  = Status(core.StatusError)
	StatusTimeout                = Status(core.StatusTimeout)
	StatusOOM                    = Status(core.StatusOOM)
	StatusOutputLimit            = Status(core.StatusOutputLimit)
	StatusRejected               = Status(core.StatusRejected) // unknown tool, bad arguments, policy
	StatusPendingApproval Status = "pending_approval"          // see Approve / Reject
)

// Platform failures: each is the name of the core.Code it stands for,
// except that a session the backend does not know (core.ErrNotFound) is
// "session_not_found", the name the API has always given it.
const (
	StatusBusy                   = Status(core.ErrBusy)        // admission refused (busy, quota, rate_limited); try later
	StatusSessionLost            = Status(core.ErrSessionLost) // the worker holding the session is gone
	StatusUnavailable            = Status(core.ErrUnavailable) // Docker or Redis unreachable, or the deadline passed
	StatusInternal               = Status(core.ErrInternal)    // a platform bug or failure
	StatusSessionNotFound Status = "session_not_found"         // core.ErrNotFound of a session
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
	// Network lists the connections the call attempted (issue 29): its
	// sandbox's through the egress proxy, or fetch_url's hops.
	Network []core.NetworkAttempt `json:"network,omitempty"`
	// ApprovalToken is set with StatusPendingApproval.
	ApprovalToken string `json:"approval_token,omitempty"`
	DurationMS    int64  `json:"duration_ms"`
	// Code classifies a call that did not get to run or finish: the
	// core.Code of a platform failure (StatusBusy, StatusUnavailable,
	// StatusInternal, StatusSessionLost, StatusSessionNotFound), or
	// core.ErrInvalid for a rejected call whose arguments ask for more
	// than the caller's ceiling, which a transport refuses as a bad
	// request (HTTP 400). Empty for what the code did and for the gate's
	// other refusals, which are answers for the model. Never serialised.
	Code core.Code `json:"-"`
	// Err is the platform error behind a platform failure, for
	// errors.Is/As by transports. Never serialised.
	Err error `json:"-"`
}

// Executor runs a sandbox request somewhere: directly on a sandbox engine,
// or through the queue on a worker. Returned errors are platform failures.
type Executor interface {
	Exec(ctx context.Context, req core.Request) (core.Result, error)
}
