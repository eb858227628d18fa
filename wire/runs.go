package wire

import (
	"encoding/json"
	"time"
)

// CreateRunRequest is the body of POST /v1/runs: exactly one of Goal or
// Messages.
type CreateRunRequest struct {
	Goal string `json:"goal,omitempty"`
	// Messages are OpenAI chat messages, instead of Goal: a JSON array.
	Messages  json.RawMessage `json:"messages,omitempty"`
	Model     string          `json:"model,omitempty"`
	MaxSteps  int             `json:"max_steps,omitempty"`
	SessionID string          `json:"session_id,omitempty"`
	// Input names an input folder the operator allowed (mounted read-only).
	Input string `json:"input,omitempty"`
	// PreviousRunID continues that finished run's conversation (a follow-up
	// question); the session defaults to the previous run's.
	PreviousRunID string `json:"previous_run_id,omitempty"`
	// Environment names the environment the run's one-shot tool calls
	// run in (default python, shell for execute_shell).
	Environment string `json:"environment,omitempty"`
}

// ApprovalDecision is the body of POST /v1/runs/{id}/approvals/{token}.
type ApprovalDecision struct {
	Approve *bool  `json:"approve"` // required
	Reason  string `json:"reason,omitempty"`
}

// RunStatus is where a run stands.
type RunStatus string

// Run states. A run ends in one of the final states.
const (
	RunRunning         RunStatus = "running"
	RunWaitingApproval RunStatus = "waiting_approval"
	RunDone            RunStatus = "done"      // final answer given
	RunMaxSteps        RunStatus = "max_steps" // step limit, forced final answer given
	RunLoop            RunStatus = "loop"      // repeated identical calls
	RunBudget          RunStatus = "budget"    // token or wall-clock budget spent
	RunCancelled       RunStatus = "cancelled"
	RunFailed          RunStatus = "failed" // the model could not be reached, etc.
)

// Final reports whether a run in state s has ended.
func (s RunStatus) Final() bool {
	return s != "" && s != RunRunning && s != RunWaitingApproval
}

// Run is a snapshot of an agent run: the answer of POST /v1/runs, GET
// /v1/runs/{id}, cancel and approvals.
type Run struct {
	ID          string    `json:"id"`
	Status      RunStatus `json:"status"`
	Steps       int       `json:"steps"`
	Usage       Usage     `json:"usage"`
	FinalAnswer string    `json:"final_answer,omitempty"`
	Error       string    `json:"error,omitempty"`
	Created     time.Time `json:"created"`
	Ended       time.Time `json:"ended,omitzero"`
	// PendingApprovals lists approval tokens the run is waiting on.
	PendingApprovals []string `json:"pending_approvals,omitempty"`
}

// Usage is token and time accounting, per step and per run.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	ToolSchemaTokens int64 `json:"tool_schema_tokens"` // estimated share spent on tool schemas
	ModelMS          int64 `json:"model_ms"`
	ToolMS           int64 `json:"tool_ms"`
	// Estimated is set when the server reported no usage for some call and
	// its tokens were estimated as characters/4.
	Estimated bool `json:"estimated,omitempty"`
}

// EventType names a RunEvent.
type EventType string

// The events a run emits, in order.
const (
	EventStepStarted      EventType = "step_started"
	EventAssistantMessage EventType = "assistant_message"
	EventToolCall         EventType = "tool_call"
	EventToolResult       EventType = "tool_result"
	EventApprovalNeeded   EventType = "approval_needed"
	EventFinalAnswer      EventType = "final_answer"
	EventError            EventType = "error"
	EventRunFinished      EventType = "run_finished"
)

// RunEvent is one thing that happened in a run (the data of one event of
// GET /v1/runs/{id}/events). Seq numbers start at 1 and are dense, so a
// client resumes after the last Seq it saw.
type RunEvent struct {
	Seq  int             `json:"seq"`
	Type EventType       `json:"type"`
	Time time.Time       `json:"time"`
	Step int             `json:"step"`
	Data json.RawMessage `json:"data"`
}
