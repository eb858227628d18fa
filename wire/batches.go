package wire

// BatchStatus is a batch's lifecycle state.
type BatchStatus string

// Batch statuses: validating → in_progress → finalizing → completed, or
// failed, cancelling → cancelled, expired (after the completion window).
const (
	BatchValidating BatchStatus = "validating"
	BatchInProgress BatchStatus = "in_progress"
	BatchFinalizing BatchStatus = "finalizing"
	BatchCompleted  BatchStatus = "completed"
	BatchFailed     BatchStatus = "failed"
	BatchCancelling BatchStatus = "cancelling"
	BatchCancelled  BatchStatus = "cancelled"
	BatchExpired    BatchStatus = "expired"
)

// Terminal reports whether no more work happens in a batch of status s.
func (s BatchStatus) Terminal() bool {
	return s == BatchCompleted || s == BatchFailed || s == BatchCancelled || s == BatchExpired
}

// BatchCounts are a batch's request counts.
type BatchCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

// BatchError is one validation problem of a batch or one item's failure.
type BatchError struct {
	Code     string `json:"code"`
	Message  string `json:"message"`
	Line     int    `json:"line,omitempty"`
	CustomID string `json:"custom_id,omitempty"`
}

// BatchErrors is the errors list of a batch, in OpenAI's shape.
type BatchErrors struct {
	Object string       `json:"object"` // "list"
	Data   []BatchError `json:"data"`
}

// Batch is a batch as answered by POST /v1/batches, GET /v1/batches/{id},
// cancel and retry (and the data of its "progress" events), in OpenAI's
// shape: times are unix seconds.
type Batch struct {
	ID               string       `json:"id"`
	Object           string       `json:"object"` // "batch"
	Status           BatchStatus  `json:"status"`
	RequestCounts    BatchCounts  `json:"request_counts"`
	CreatedAt        int64        `json:"created_at"`
	InProgressAt     int64        `json:"in_progress_at,omitempty"`
	FinalizingAt     int64        `json:"finalizing_at,omitempty"`
	CompletedAt      int64        `json:"completed_at,omitempty"`
	FailedAt         int64        `json:"failed_at,omitempty"`
	CancellingAt     int64        `json:"cancelling_at,omitempty"`
	CancelledAt      int64        `json:"cancelled_at,omitempty"`
	ExpiresAt        int64        `json:"expires_at"`
	ExpiredAt        int64        `json:"expired_at,omitempty"`
	CompletionWindow string       `json:"completion_window"`
	Concurrency      int          `json:"concurrency"`
	Limits           any          `json:"limits,omitempty"`
	Errors           *BatchErrors `json:"errors"`
	Metadata         any          `json:"metadata,omitempty"`
	// Attempt counts the retries of the batch's failed items.
	Attempt int `json:"attempt,omitempty"`
}

// BatchList is the answer of GET /v1/batches: the caller's batches,
// newest first.
type BatchList struct {
	Object  string  `json:"object"` // "list"
	Data    []Batch `json:"data"`
	HasMore bool    `json:"has_more"`
}

// BatchMapSpec is the JSON body of a map batch: one tool call template run
// once per folder matched by Each under input folder Input, or once per
// uploaded archive (multipart "spec" with "archive" files; then without
// Each and Input).
type BatchMapSpec struct {
	ToolCall         *ToolCallRequest `json:"tool_call"` // without session_id or input
	Each             string           `json:"each,omitempty"`
	Input            string           `json:"input,omitempty"`
	Concurrency      int              `json:"concurrency,omitempty"`
	CompletionWindow string           `json:"completion_window,omitempty"`
	Metadata         any              `json:"metadata,omitempty"`
}

// BatchLine is one line of GET /v1/batches/{id}/results (JSONL): one per
// item and attempt.
type BatchLine struct {
	CustomID    string      `json:"custom_id"`
	Status      string      `json:"status"`
	ExitCode    *int        `json:"exit_code,omitempty"`
	Stdout      string      `json:"stdout"`
	Stderr      string      `json:"stderr"`
	Truncated   bool        `json:"truncated,omitempty"`
	Message     string      `json:"message,omitempty"`
	Artifacts   []Artifact  `json:"artifacts,omitempty"`
	RunID       string      `json:"run_id,omitempty"`
	FinalAnswer string      `json:"final_answer,omitempty"`
	Error       *BatchError `json:"error,omitempty"`
	DurationMS  int64       `json:"duration_ms"`
	CPUSeconds  float64     `json:"cpu_seconds,omitempty"`
	// InputMode is how a folder or archive item got its files: "archive"
	// (unpacked inside the sandbox) or "mount" (read-only bind mount);
	// InputNote says why a folder was mounted instead of packed.
	InputMode   string `json:"input_mode,omitempty"`
	InputNote   string `json:"input_note,omitempty"`
	Attempt     int    `json:"attempt"`
	CompletedAt int64  `json:"completed_at"`
	// Code is what the item ran: its tool call's code or command (its
	// arguments when they hold neither), or its run's goal.
	Code string `json:"code,omitempty"`
}

// Failed reports whether the line counts as a failed item: any status but
// a tool call's ok, a run's done or max_steps, or completed.
func (l *BatchLine) Failed() bool {
	switch l.Status {
	case "ok", "done", "max_steps", "completed":
		return false
	}
	return true
}

// BatchSummary is the answer of GET /v1/batches/{id}/summary.
type BatchSummary struct {
	ID            string         `json:"id"`
	Object        string         `json:"object"` // "batch.summary"
	Status        BatchStatus    `json:"status"`
	RequestCounts BatchCounts    `json:"request_counts"`
	Statuses      map[string]int `json:"statuses"`
	DurationMS    DurationStats  `json:"duration_ms"`
	// CPUSeconds sums the CPU time the sandbox measured for each item;
	// for items it did not measure, their wall time stands in, and
	// CPUSecondsEstimated is true (CPUMeasuredItems counts the others).
	CPUSeconds          float64 `json:"cpu_seconds"`
	CPUSecondsEstimated bool    `json:"cpu_seconds_estimated"`
	CPUMeasuredItems    int     `json:"cpu_measured_items"`
	WallSeconds         float64 `json:"wall_seconds"`
}

// DurationStats are item duration percentiles in milliseconds.
type DurationStats struct {
	P50 int64 `json:"p50"`
	P95 int64 `json:"p95"`
	Max int64 `json:"max"`
	Sum int64 `json:"sum"`
}

// BatchItemEventObject is BatchItemEvent.Object.
const BatchItemEventObject = "batch.item"

// BatchItemEvent is the data of a batch's "item" event: one item (and
// attempt) finished.
type BatchItemEvent struct {
	Object      string `json:"object"` // BatchItemEventObject
	CustomID    string `json:"custom_id"`
	Status      string `json:"status"` // the result line's status
	Failed      bool   `json:"failed"`
	DurationMS  int64  `json:"duration_ms"`
	Attempt     int    `json:"attempt"`
	CompletedAt int64  `json:"completed_at"`
	// Code is what the item ran: its tool call's code or command (its
	// arguments when they hold neither), or its run's goal.
	Code string `json:"code,omitempty"`
}
