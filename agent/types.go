package agent

import (
	"encoding/json"
	"time"
)

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

// EventType names an Event.
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

// Event is one thing that happened in a run. Seq numbers start at 1 and are
// dense, so a client can resume after the last Seq it saw.
type Event struct {
	Seq  int             `json:"seq"`
	Type EventType       `json:"type"`
	Time time.Time       `json:"time"`
	Step int             `json:"step"`
	Data json.RawMessage `json:"data"`
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

// RunRequest starts a run.
type RunRequest struct {
	Goal      string          `json:"goal,omitempty"`
	Messages  json.RawMessage `json:"messages,omitempty"` // OpenAI chat messages, instead of Goal
	Model     string          `json:"model,omitempty"`
	MaxSteps  int             `json:"max_steps,omitempty"`
	SessionID string          `json:"session_id,omitempty"`
	Mount     string          `json:"mount,omitempty"` // host folder already authorised by the caller
	// PreviousRunID continues that finished run's conversation: the new
	// run starts with its full conversation plus Goal (or Messages), on
	// its session unless SessionID says otherwise.
	PreviousRunID string `json:"previous_run_id,omitempty"`
	Owner         string `json:"-"`
}

// RunView is a snapshot of a run.
type RunView struct {
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
