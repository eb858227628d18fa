package core

// Session snapshot operations (issue 30).
const (
	// OpSessionSnapshot saves SessionID (its Python namespace, with dill,
	// inside its own sandbox, and its work folder) as the snapshot
	// Request.SnapshotID; Result.Snapshot reports it.
	OpSessionSnapshot Op = "session.snapshot"
	// OpSessionRestore loads the snapshot Request.SnapshotID into the
	// fresh session SessionID (Request.Restore: RestoreNamespace or
	// RestoreReplay); Result.Snapshot reports what was loaded.
	OpSessionRestore Op = "session.restore"
)

// How a session is restored from a snapshot.
const (
	// RestoreNamespace loads the saved namespace and work folder.
	RestoreNamespace = "namespace"
	// RestoreReplay restores the work folder and runs the snapshot's call
	// log again, call by call, to rebuild what could not be saved.
	RestoreReplay = "replay"
)

// SnapshotSkip is a name of a session's namespace that a snapshot did not
// save (or a restore could not load), with its type and why.
type SnapshotSkip struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

// SnapshotReport is what a snapshot saved or a restore loaded.
type SnapshotReport struct {
	// Names are the namespace's names saved (or loaded).
	Names []string `json:"names,omitempty"`
	// Modules are names bound to modules, re-imported on restore.
	Modules map[string]string `json:"modules,omitempty"`
	// Skipped are the names not saved (or not loaded), never silently.
	Skipped []SnapshotSkip `json:"skipped"`
	// Bytes is the snapshot's stored size: namespace and work folder.
	Bytes int64 `json:"bytes,omitempty"`
	// Entries counts the work folder's entries.
	Entries int `json:"entries,omitempty"`
	// Replay reports each call of a replayed call log, in order.
	Replay []ReplayedCall `json:"replay,omitempty"`
}

// ReplayedCall is one call of a replayed call log.
type ReplayedCall struct {
	Index  int    `json:"index"`
	Status Status `json:"status"`
	// Message says why a call did not end ok (the error's name and value).
	Message string `json:"message,omitempty"`
}

// SnapshotParts are a session snapshot's parts, in the order they are read
// and written: the namespace (a dill pickle, made and read only inside the
// owner's sandbox) and the work folder (a tar).
var SnapshotParts = []string{"ns", "work"}

// SnapshotSink receives a snapshot's parts from the sandbox: for each
// part, in SnapshotParts order, its chunks in order, with the part's
// whole size.
type SnapshotSink func(part string, size int64, chunk []byte) error

// SnapshotSource writes a snapshot's part into the sandbox by calling
// write with its chunks in order (each at most 4 MiB).
type SnapshotSource func(part string, write func(chunk []byte) error) error
