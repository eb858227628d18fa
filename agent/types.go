package agent

import (
	"encoding/json"
)

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
	// Environment is the environment of the run's one-shot tool calls
	// (dispatcher.Call.Environment; default python, shell for execute_shell).
	Environment string `json:"environment,omitempty"`
}
