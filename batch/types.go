package batch

import (
	"time"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/dispatcher"
)

// Status is a batch's lifecycle state.
type Status string

// Batch statuses: validating → in_progress → finalizing → completed, or
// failed, cancelling → cancelled, expired (after the completion window).
const (
	StatusValidating Status = "validating"
	StatusInProgress Status = "in_progress"
	StatusFinalizing Status = "finalizing"
	StatusCompleted  Status = "completed"
	StatusFailed     Status = "failed"
	StatusCancelling Status = "cancelling"
	StatusCancelled  Status = "cancelled"
	StatusExpired    Status = "expired"
)

// Terminal reports whether no more work happens in a batch of status s.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled || s == StatusExpired
}

// Item statuses, stored on each item record.
const (
	ItemPending   = "pending"
	ItemCompleted = "completed"
	ItemFailed    = "failed"
	ItemCancelled = "cancelled"
	ItemExpired   = "expired"
)

// Counts are a batch's request counts.
type Counts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

// Limits are a batch's own limits.
type Limits struct {
	// Concurrency is how many items of the batch run at once.
	Concurrency int `json:"concurrency"`
	// CompletionWindow is how long the batch may take before it expires.
	CompletionWindow string `json:"completion_window"`
}

// ItemError is one validation problem or item failure.
type ItemError struct {
	Code     string `json:"code"`
	Message  string `json:"message"`
	Line     int    `json:"line,omitempty"`
	CustomID string `json:"custom_id,omitempty"`
}

// Errors is the errors list of a batch, in OpenAI's shape.
type Errors struct {
	Object string      `json:"object"`
	Data   []ItemError `json:"data"`
}

// Lease is who runs a batch and until when.
type Lease struct {
	Holder string    `json:"holder"`
	Until  time.Time `json:"until"`
}

// Batch is the batch record.
type Batch struct {
	ID               string    `json:"id"`
	Object           string    `json:"object"`
	Owner            string    `json:"-"`
	Status           Status    `json:"status"`
	RequestCounts    Counts    `json:"request_counts"`
	CreatedAt        int64     `json:"created_at"`
	InProgressAt     int64     `json:"in_progress_at,omitempty"`
	FinalizingAt     int64     `json:"finalizing_at,omitempty"`
	CompletedAt      int64     `json:"completed_at,omitempty"`
	FailedAt         int64     `json:"failed_at,omitempty"`
	CancellingAt     int64     `json:"cancelling_at,omitempty"`
	CancelledAt      int64     `json:"cancelled_at,omitempty"`
	ExpiresAt        int64     `json:"expires_at"`
	ExpiredAt        int64     `json:"expired_at,omitempty"`
	CompletionWindow string    `json:"completion_window"`
	Concurrency      int       `json:"concurrency"`
	Limits           any       `json:"limits,omitempty"`
	Errors           *Errors   `json:"errors"`
	Metadata         any       `json:"metadata,omitempty"`
	Lease            *Lease    `json:"lease,omitempty"`
	Attempt          int       `json:"attempt,omitempty"`
	Updated          time.Time `json:"-"`
}

// stored is the batch record as kept in the store (with the owner).
type stored struct {
	Batch
	OwnerName string `json:"owner"`
}

// Item is one unit of a batch: a tool call or an agent run.
type Item struct {
	Index    int               `json:"index"`
	CustomID string            `json:"custom_id"`
	Call     *dispatcher.Call  `json:"call,omitempty"`
	Run      *agent.RunRequest `json:"run,omitempty"`
	// Archive, when > 0, names the batch's uploaded archive (1-based)
	// sent as the call's Archive.
	Archive int    `json:"archive,omitempty"`
	Status  string `json:"status"`
	Attempt int    `json:"attempt"`
	Result  *Line  `json:"result,omitempty"`
}

// Artifact is an artifact kept by reference in a result line.
type Artifact struct {
	ID     string `json:"id,omitempty"`
	Name   string `json:"name"`
	MIME   string `json:"mime"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	URL    string `json:"url,omitempty"`
}

// Line is one result line of GET /v1/batches/{id}/results.
type Line struct {
	CustomID    string     `json:"custom_id"`
	Status      string     `json:"status"`
	ExitCode    *int       `json:"exit_code,omitempty"`
	Stdout      string     `json:"stdout"`
	Stderr      string     `json:"stderr"`
	Truncated   bool       `json:"truncated,omitempty"`
	Message     string     `json:"message,omitempty"`
	Artifacts   []Artifact `json:"artifacts,omitempty"`
	RunID       string     `json:"run_id,omitempty"`
	FinalAnswer string     `json:"final_answer,omitempty"`
	Error       *ItemError `json:"error,omitempty"`
	DurationMS  int64      `json:"duration_ms"`
	CPUSeconds  float64    `json:"cpu_seconds,omitempty"`
	// InputMode is how a folder or archive item got its files: "archive"
	// (unpacked inside the sandbox) or "mount" (read-only bind mount);
	// InputNote says why a folder was mounted instead of packed.
	InputMode   string `json:"input_mode,omitempty"`
	InputNote   string `json:"input_note,omitempty"`
	Attempt     int    `json:"attempt"`
	CompletedAt int64  `json:"completed_at"`
}

// Failed reports whether the line counts as a failed item.
func (l *Line) Failed() bool {
	switch l.Status {
	case "ok", "done", "max_steps", ItemCompleted:
		return false
	}
	return true
}
