package wire

import "time"

// Restore modes of CreateSessionRequest.Restore.
const (
	RestoreNamespace = "namespace" // the saved namespace and work folder
	RestoreReplay    = "replay"    // the work folder, then the call log run again
)

// SnapshotSkip is a name a snapshot did not save (or a restore did not
// load): an open file, a socket, a generator, a lock, a thread, or a value
// that cannot be serialized.
type SnapshotSkip struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

// SnapshotCreated is the answer of POST /v1/sessions/{id}/snapshot.
type SnapshotCreated struct {
	SnapshotID string         `json:"snapshot_id"`
	Bytes      int64          `json:"bytes"`
	Skipped    []SnapshotSkip `json:"skipped"`
}

// Snapshot is a stored session snapshot: GET /v1/snapshots/{id} and each
// entry of GET /v1/snapshots.
type Snapshot struct {
	SnapshotID string    `json:"snapshot_id"`
	SessionID  string    `json:"session_id"`
	Created    time.Time `json:"created"`
	Bytes      int64     `json:"bytes"`
	// Environment and Limits are the session's, which a restore opens
	// with.
	Environment string `json:"environment"`
	Limits      Limits `json:"limits"`
	// Names are the namespace's saved names; Modules are re-imported.
	Names   []string          `json:"names"`
	Modules map[string]string `json:"modules,omitempty"`
	Skipped []SnapshotSkip    `json:"skipped"`
	// Calls is how many calls the snapshot's call log holds.
	Calls int `json:"calls"`
}

// SnapshotList is the answer of GET /v1/snapshots.
type SnapshotList struct {
	Snapshots []Snapshot `json:"snapshots"`
}

// ReplayedCall is one call of a replayed call log, in order.
type ReplayedCall struct {
	Index   int    `json:"index"`
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// SessionRestored says how a session opened from a snapshot (or a fork)
// was restored: what was loaded, what is missing, and with "replay" each
// call's outcome.
type SessionRestored struct {
	SnapshotID string         `json:"snapshot_id"`
	Restore    string         `json:"restore"`
	Names      []string       `json:"names"`
	Skipped    []SnapshotSkip `json:"skipped"`
	Replay     []ReplayedCall `json:"replay,omitempty"`
}
