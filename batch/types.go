package batch

import (
	"time"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/wire"
)

// Item statuses, stored on each item record.
const (
	ItemPending   = "pending"
	ItemCompleted = "completed"
	ItemFailed    = "failed"
	ItemCancelled = "cancelled"
	ItemExpired   = "expired"
)

// Limits are a batch's own limits.
type Limits struct {
	// Concurrency is how many items of the batch run at once.
	Concurrency int `json:"concurrency"`
	// CompletionWindow is how long the batch may take before it expires.
	CompletionWindow string `json:"completion_window"`
}

// Lease is who runs a batch and until when.
type Lease struct {
	Holder string    `json:"holder"`
	Until  time.Time `json:"until"`
}

// Batch is the batch record: what the API answers (wire.Batch) and what
// only the runner reads.
type Batch struct {
	wire.Batch
	Owner   string    `json:"-"`
	Lease   *Lease    `json:"lease,omitempty"`
	Updated time.Time `json:"-"`
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
	Archive int             `json:"archive,omitempty"`
	Status  string          `json:"status"`
	Attempt int             `json:"attempt"`
	Result  *wire.BatchLine `json:"result,omitempty"`
}
