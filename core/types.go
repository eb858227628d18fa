package core

import (
	"time"
)

// Status is the outcome of the user's code. It is a result, never a Go error.
type Status string

// The outcomes a Result can carry.
const (
	StatusOK          Status = "ok"           // exit code 0
	StatusError       Status = "error"        // non-zero exit or an exception
	StatusTimeout     Status = "timeout"      // the wall-clock deadline passed
	StatusOOM         Status = "oom"          // the memory limit was hit
	StatusOutputLimit Status = "output_limit" // stdout or stderr went past its cap
	StatusRejected    Status = "rejected"     // the request itself was refused
)

// Language selects how Code is run.
type Language string

// The languages the sandbox runs.
const (
	Python Language = "python"
	Shell  Language = "shell"
)

// Op is the operation a Request asks for.
type Op string

// The operations a worker's Engine.Handle accepts.
const (
	OpExec         Op = "exec"          // run Code (one-shot, or in SessionID)
	OpSessionOpen  Op = "session.open"  // create a session; Result.SessionID names it
	OpSessionClose Op = "session.close" // destroy SessionID
	OpFilePut      Op = "file.put"      // write Data to Path in SessionID's work folder
	OpFileGet      Op = "file.get"      // read Path from SessionID's work folder
)

// Limits bounds one execution. A zero field means "the server default"; a
// request may lower any limit but never raise it past the server maximum.
type Limits struct {
	Memory      int64         `json:"memory_bytes,omitempty"`    // RAM, swap equal to it
	CPUs        float64       `json:"cpus,omitempty"`            // CPU quota in cores
	Pids        int64         `json:"pids,omitempty"`            // process/thread count
	Timeout     time.Duration `json:"timeout_ns,omitempty"`      // wall clock per call
	OutputBytes int           `json:"output_bytes,omitempty"`    // cap per stream
	TmpfsBytes  int64         `json:"tmpfs_bytes,omitempty"`     // /tmp and /work size each
	NoFile      int64         `json:"nofile,omitempty"`          // open files
	FileSize    int64         `json:"file_size_bytes,omitempty"` // largest file written
}

// Request is one unit of work for the sandbox: an execution, or a session or
// file operation. It is plain data so that it can cross a queue as JSON.
type Request struct {
	Op        Op                `json:"op,omitempty"` // default OpExec
	Language  Language          `json:"language,omitempty"`
	Code      string            `json:"code,omitempty"`
	Image     string            `json:"image,omitempty"` // override of the language's image
	Limits    Limits            `json:"limits,omitempty"`
	Mount     string            `json:"mount,omitempty"` // host folder, read-only at /workspace
	Env       map[string]string `json:"env,omitempty"`
	Owner     string            `json:"owner,omitempty"`
	JobID     string            `json:"job_id,omitempty"`
	SessionID string            `json:"session_id,omitempty"`
	Path      string            `json:"path,omitempty"` // for file operations, relative to /work
	Data      []byte            `json:"data,omitempty"` // for OpFilePut
	// Offset makes file operations chunked. For OpFilePut, 0 creates or
	// truncates Path and writes Data; > 0 writes Data at Offset, which must
	// be the file's current size (an append). For OpFileGet it is the first
	// byte returned.
	Offset int64 `json:"offset,omitempty"`
	// Length bounds the bytes an OpFileGet returns from Offset; 0 means to
	// the end of the file.
	Length int64 `json:"length,omitempty"`
	// Background, on OpSessionOpen, lets processes a session call starts
	// keep running after the call returns; otherwise they are stopped.
	Background bool `json:"background,omitempty"`
}

// Artifact is a file the code produced: a matplotlib figure or a file
// written under /work/outputs.
type Artifact struct {
	Name   string `json:"name"`
	MIME   string `json:"mime"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Data   []byte `json:"data,omitempty"`
}

// Result is what the user's code did. Platform failures are Go errors instead.
type Result struct {
	Status     Status     `json:"status"`
	ExitCode   int        `json:"exit_code"`
	Stdout     string     `json:"stdout"`
	Stderr     string     `json:"stderr"`
	Truncated  bool       `json:"truncated"`
	DurationMS int64      `json:"duration_ms"`
	Message    string     `json:"message,omitempty"` // why, for rejected/timeout/oom/output_limit
	Artifacts  []Artifact `json:"artifacts,omitempty"`
	Warnings   []string   `json:"warnings,omitempty"`
	SessionID  string     `json:"session_id,omitempty"` // for OpSessionOpen
	Container  string     `json:"container,omitempty"`  // short id of the container that ran it
	Data       []byte     `json:"data,omitempty"`       // for OpFileGet
	// Size is the file's total size after an OpFilePut and of the file an
	// OpFileGet read from (Data may be only a chunk of it). A worker that
	// leaves it 0 for a non-empty file does not do chunked transfers.
	Size int64 `json:"size,omitempty"`
	// SessionEnded is true when the call's session was destroyed (for
	// example an interpreter that could not be interrupted after a timeout).
	SessionEnded bool `json:"session_ended,omitempty"`
}
