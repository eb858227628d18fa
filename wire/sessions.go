package wire

import (
	"encoding/json"
	"time"
)

// CreateSessionRequest is the optional body of POST /v1/sessions.
type CreateSessionRequest struct {
	// Limits lower the server's defaults for the session; nil keeps them.
	Limits *Limits `json:"limits,omitempty"`
	// Background lets processes the session's calls start keep running
	// after each call returns; the key's policy must allow it (else 400).
	Background bool `json:"background,omitempty"`
	// Environment names the environment the session runs in (default
	// python).
	Environment string `json:"environment,omitempty"`
	// Snapshot opens the session from that snapshot of the caller's
	// (issue 30), with the snapshot's limits unless Limits is given;
	// Restore is RestoreNamespace (the default) or RestoreReplay.
	Snapshot string `json:"snapshot,omitempty"`
	Restore  string `json:"restore,omitempty"`
}

// Session states (Session.State).
const (
	SessionIdle    = "idle"
	SessionBusy    = "busy"
	SessionUnknown = "unknown" // the sandbox did not answer in time
	// SessionHibernated: the session's container was freed and its state
	// kept in a snapshot (idle, or its worker stopped or died); its next
	// call wakes it (issue 30).
	SessionHibernated = "hibernated"
)

// Session is a session: one sandbox keeping state between calls. POST
// /v1/sessions answers the record (ID to Background); GET, the list and
// restart add the sandbox's live state.
type Session struct {
	ID       string    `json:"id"`
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used"`
	// ExpiresAt is when the session ends unless it is used again.
	ExpiresAt time.Time `json:"expires_at"`
	// Background says whether processes its calls start may outlive the
	// calls.
	Background bool `json:"background"`
	// Environment is the environment the session runs in.
	Environment string `json:"environment,omitempty"`

	// CreatedAt and LastUsedAt repeat Created and LastUsed.
	CreatedAt  time.Time `json:"created_at,omitzero"`
	LastUsedAt time.Time `json:"last_used_at,omitzero"`
	// AgeSeconds is how long the session has existed.
	AgeSeconds float64 `json:"age_seconds,omitempty"`
	// State is SessionIdle, SessionBusy or SessionUnknown (then the live
	// fields below are nil).
	State string `json:"state,omitempty"`
	// ExecutionCount is the number of calls the session has run.
	ExecutionCount *int `json:"execution_count,omitempty"`
	// CPUMS is the CPU time the session's sandbox has used, in milliseconds.
	CPUMS *float64 `json:"cpu_ms,omitempty"`
	// MemBytes is the sandbox's memory use now.
	MemBytes *int64 `json:"mem_bytes,omitempty"`
	// TimeoutSeconds is the session's own wall-clock limit per call: what
	// a call that names no timeout gets (answered by POST and GET
	// /v1/sessions/{id}).
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	// Restored reports a session opened from a snapshot or forked.
	Restored *SessionRestored `json:"restored,omitempty"`
}

// SessionList is the answer of GET /v1/sessions, oldest first.
type SessionList struct {
	Sessions []Session `json:"sessions"`
}

// Interrupted is the answer of POST /v1/sessions/{id}/interrupt: whether a
// call was running (it ends with KeyboardInterrupt).
type Interrupted struct {
	Interrupted bool `json:"interrupted"`
}

// FileWritten is the answer of a file upload.
type FileWritten struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// FileList is the answer of GET /v1/sessions/{id}/files: every file under
// Path (relative to the work folder), walked breadth first within bounds.
type FileList struct {
	Path  string     `json:"path"`
	Files []FileInfo `json:"files"`
	// Truncated is true when the walk stopped at its bounds.
	Truncated bool `json:"truncated"`
}

// FileInfo is one entry of a FileList.
type FileInfo struct {
	Path  string  `json:"path"` // relative to the work folder
	Type  string  `json:"type"` // file, dir, symlink or other
	Size  int64   `json:"size"`
	MTime float64 `json:"mtime"` // unix seconds
}

// Notebook is the answer of GET /v1/sessions/{id}/notebook: the saved
// cells, kept as they were sent, their version and when they were saved.
type Notebook struct {
	// Cells are the cells, each the client's JSON object as saved.
	Cells     []json.RawMessage `json:"cells"`
	Version   int64             `json:"version"`
	UpdatedAt time.Time         `json:"updated_at"`
}

// NotebookSave is the body of PUT /v1/sessions/{id}/notebook. Version is
// the version last read: 0 or absent for the first save.
type NotebookSave struct {
	Cells   json.RawMessage `json:"cells"`
	Version *int64          `json:"version,omitempty"`
}

// NotebookSaved is the answer of PUT /v1/sessions/{id}/notebook.
type NotebookSaved struct {
	Version   int64     `json:"version"`
	UpdatedAt time.Time `json:"updated_at"`
}
