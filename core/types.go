package core

import (
	"encoding/json"
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
	OpFileGet      Op = "file.get"      // read Path from SessionID's work folder (from Offset, at most Length bytes)
	OpFileList     Op = "file.list"     // list the folder Path ("" for /work) of SessionID
	// OpSessionInterrupt raises KeyboardInterrupt in SessionID's running call.
	OpSessionInterrupt Op = "session.interrupt"
	// OpSessionRestart replaces SessionID's Python process (files are kept).
	OpSessionRestart Op = "session.restart"
	// OpSessionInfo describes SessionID (Result.Session).
	OpSessionInfo Op = "session.info"
	// OpSessionIntrospect asks SessionID's Python process about Code
	// (Request.Introspect: completion, inspection or is-complete); the
	// kernel's answer is Result.Reply.
	OpSessionIntrospect Op = "session.introspect"
	// OpSessionInput answers the input() that SessionID's running call is
	// waiting in (an EventInput) with Request.Stdin; Result.InputTaken
	// says whether a call was waiting.
	OpSessionInput Op = "session.input"
)

// Limits bounds one execution. A zero field means "the server default"; a
// request may lower any limit but never raise it past the server maximum.
type Limits struct {
	Memory      int64         `json:"memory_bytes,omitempty"`    // RAM, swap equal to it
	CPUs        float64       `json:"cpus,omitempty"`            // CPU quota in cores
	Pids        int64         `json:"pids,omitempty"`            // process/thread count
	Timeout     time.Duration `json:"timeout_ns,omitempty"`      // wall clock per call
	OutputBytes int           `json:"output_bytes,omitempty"`    // kept per stream: first and last half
	TmpfsBytes  int64         `json:"tmpfs_bytes,omitempty"`     // /tmp and /work size each
	NoFile      int64         `json:"nofile,omitempty"`          // open files
	FileSize    int64         `json:"file_size_bytes,omitempty"` // largest file written
}

// Request is one unit of work for the sandbox: an execution, or a session or
// file operation. It is plain data so that it can cross a queue as JSON.
type Request struct {
	Op       Op       `json:"op,omitempty"` // default OpExec
	Language Language `json:"language,omitempty"`
	Code     string   `json:"code,omitempty"`
	Image    string   `json:"image,omitempty"` // override of the language's image
	// Environment names the environment the call runs in (issue 28): a
	// built-in one (python, shell: the configured image of that name) or
	// a custom one, whose checked image the gate resolved into Image and
	// whose content hash into EnvironmentHash. Empty: the language's image.
	Environment     string            `json:"environment,omitempty"`
	EnvironmentHash string            `json:"environment_hash,omitempty"`
	Limits          Limits            `json:"limits,omitempty"`
	Mount           string            `json:"mount,omitempty"` // host folder, read-only at /workspace
	Env             map[string]string `json:"env,omitempty"`
	Owner           string            `json:"owner,omitempty"`
	JobID           string            `json:"job_id,omitempty"`
	SessionID       string            `json:"session_id,omitempty"`
	Path            string            `json:"path,omitempty"` // for file operations, relative to /work
	Data            []byte            `json:"data,omitempty"` // for OpFilePut
	// Stdin is the call's standard input (empty: none).
	Stdin string `json:"stdin,omitempty"`
	// Background keeps processes a session call started running after it
	// returns (by default they are stopped).
	Background bool `json:"background,omitempty"`
	// Generated marks Code as a program Airlock generated (the file and SQL
	// tools), not the caller's: in a session it runs in a fresh interpreter
	// beside the session's kernel, never in it, with every process of the
	// session stopped meanwhile, so nothing the session's code did can
	// change what it reads or reports.
	Generated bool `json:"generated,omitempty"`
	// Offset is where OpFilePut writes (0 creates or truncates the file,
	// more appends at exactly that offset) and where OpFileGet reads.
	Offset int64 `json:"offset,omitempty"`
	// Length bounds the bytes OpFileGet returns (0: the server maximum).
	Length int64 `json:"length,omitempty"`
	// AllowStdin, on a session exec without Stdin, lets input() ask the
	// caller: the call emits an EventInput and waits for an OpSessionInput
	// (Jupyter's input_request). Without it input() reads the empty stdin.
	AllowStdin bool `json:"allow_stdin,omitempty"`
	// Notebook runs the call with a notebook front end's conventions: the
	// last expression's value is not printed but comes as a Display with
	// Result set (Jupyter's execute_result), and matplotlib figures come as
	// image/png Displays instead of figure-N.png artifacts.
	Notebook bool `json:"notebook,omitempty"`
	// Introspect is the question of an OpSessionIntrospect about Code.
	Introspect *Introspect `json:"introspect,omitempty"`
	// Lane is the queue lane the call waits in: LaneInteractive ("") or
	// LaneBatch, which workers serve only when no interactive call waits.
	Lane Lane `json:"lane,omitempty"`
	// IdempotencyKey, when set, makes the execution at most once per owner
	// and key: a second submission with the same key attaches to the first
	// one's job and gets its result instead of running again.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Archive, when set, is a tar (optionally gzip-compressed) or zip
	// archive that the sandbox unpacks inside the container into
	// /workspace before the code runs (instead of a host Mount), so the
	// call can use the owner's warm containers. It is at most
	// MaxArchiveBytes; entries that escape the folder (absolute paths,
	// "..", links pointing outside), devices and archives over the
	// unpacked-size or entry bounds are refused with ErrInvalid naming
	// the entry. Mount and Archive are exclusive.
	Archive []byte `json:"archive,omitempty"`
	// SnapshotID names the snapshot of an OpSessionSnapshot or
	// OpSessionRestore; Restore is the restore's mode (RestoreNamespace,
	// RestoreReplay).
	SnapshotID string `json:"snapshot_id,omitempty"`
	Restore    string `json:"restore,omitempty"`
	// Egress is the call's network policy in the egress package's
	// canonical form (egress.Policy.String; issue 29), set by the
	// dispatcher from the key's policy; "" means no network, as always
	// before. A session takes its policy from its OpSessionOpen request.
	Egress string `json:"egress,omitempty"`
	// SessionExpires, on an OpSessionOpen that wakes a session (SessionID
	// and SnapshotID set, issue 30), keeps the session's maximum life: the
	// new container ends then, not a full life after the wake.
	SessionExpires time.Time `json:"session_expires,omitzero"`
}

// The kinds of question an OpSessionIntrospect asks.
const (
	IntrospectComplete   = "complete"    // completions at CursorPos
	IntrospectInspect    = "inspect"     // help on the name at CursorPos
	IntrospectIsComplete = "is_complete" // whether Code is a complete statement
)

// Introspect is a question about code in a session's namespace, answered by
// the kernel (Jedi in the python image) as Jupyter's complete, inspect and
// is_complete replies would be (see images/python/PROTOCOL.md).
type Introspect struct {
	Kind        string `json:"kind"`
	CursorPos   int    `json:"cursor_pos"` // in Unicode code points, as Jupyter counts
	DetailLevel int    `json:"detail_level,omitempty"`
}

// MaxArchiveBytes bounds Request.Archive (the packed bytes).
const MaxArchiveBytes = 16 << 20

// Lane is a queue lane: interactive calls go before batch items.
type Lane string

// The lanes.
const (
	LaneInteractive Lane = ""
	LaneBatch       Lane = "batch"
)

// ExecError is an exception the code raised, as structured data.
type ExecError struct {
	Name      string   `json:"name"`
	Value     string   `json:"value"`
	Traceback []string `json:"traceback"`
}

// Display is one rich output item: a MIME bundle (text/plain, text/html,
// image/png as base64, ...) from the last expression or a display() call.
type Display struct {
	Data map[string]string `json:"data"`
	// Result marks the cell's value (Request.Notebook): Jupyter's
	// execute_result rather than a display_data.
	Result bool `json:"result,omitempty"`
}

// Dropped counts the output bytes left out of Stdout and Stderr (the
// middle of a stream past its cap; the head and tail are kept).
type Dropped struct {
	Stdout int64 `json:"stdout"`
	Stderr int64 `json:"stderr"`
}

// FileEntry is one item of a session folder listing.
type FileEntry struct {
	Name  string  `json:"name"`
	Type  string  `json:"type"` // file, dir, symlink or other
	Size  int64   `json:"size"`
	MTime float64 `json:"mtime"` // unix seconds
}

// SessionInfo describes a live session.
type SessionInfo struct {
	ID        string    `json:"id"`
	Owner     string    `json:"owner"`
	Created   time.Time `json:"created"`
	LastUsed  time.Time `json:"last_used"`
	ExpiresAt time.Time `json:"expires_at"`
	Container string    `json:"container"`
	State     string    `json:"state"` // idle or busy
	ExecCount int       `json:"exec_count"`
	CPUMS     float64   `json:"cpu_ms"`    // CPU time of the session's container so far
	MemBytes  int64     `json:"mem_bytes"` // its memory use now
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
	// OpFileGet read from (Data may be only a chunk of it).
	Size int64 `json:"size,omitempty"`
	// SessionEnded is true when the call's session was destroyed (for
	// example an interpreter that could not be interrupted after a timeout).
	SessionEnded bool `json:"session_ended,omitempty"`
	// Error is the exception that ended the code, if any.
	Error *ExecError `json:"error,omitempty"`
	// ExecutionCount numbers a session's calls (1 for a one-shot call).
	ExecutionCount int `json:"execution_count,omitempty"`
	// Display holds rich outputs in the order they were produced.
	Display []Display `json:"display,omitempty"`
	// Dropped counts output bytes cut from the middle of each stream.
	Dropped Dropped `json:"dropped"`
	// KernelRestarted: the session's Python process died or was replaced
	// during the call; files are kept, Python state is fresh.
	KernelRestarted bool `json:"kernel_restarted,omitempty"`
	// Entries lists a folder, for OpFileList.
	Entries []FileEntry `json:"entries,omitempty"`
	// Session describes a session, for OpSessionInfo.
	Session *SessionInfo `json:"session,omitempty"`
	// Interrupted is true when OpSessionInterrupt found a call to interrupt.
	Interrupted bool `json:"interrupted,omitempty"`
	// Reply is the kernel's answer to an OpSessionIntrospect: the content
	// of Jupyter's complete_reply, inspect_reply or is_complete_reply.
	Reply json.RawMessage `json:"reply,omitempty"`
	// InputTaken is true when an OpSessionInput reached a waiting input().
	InputTaken bool `json:"input_taken,omitempty"`
	// CPUSeconds is the CPU time (user + system) the call's processes
	// used, as the controller measured it; 0 when not measured.
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	// Snapshot reports an OpSessionSnapshot or OpSessionRestore.
	Snapshot *SnapshotReport `json:"snapshot,omitempty"`
	// Network lists every connection the call attempted through the
	// egress proxy, allowed or refused (issue 29); empty without a policy.
	Network []NetworkAttempt `json:"network,omitempty"`
	// Resumed is true when the call's session had lost its container
	// (hibernated, its worker stopped or died) and was restored from its
	// last snapshot into a fresh one before the call ran (issue 30);
	// WakeMS is how long that took and ResumeSkipped the names the
	// snapshot could not save.
	Resumed       bool           `json:"resumed,omitempty"`
	WakeMS        int64          `json:"wake_ms,omitempty"`
	ResumeSkipped []SnapshotSkip `json:"resume_skipped,omitempty"`
}

// NetworkAttempt is one connection a call attempted: where to, whether the
// policy and the address checks let it through, why it was refused (or cut
// short, by a cap or the call's end) and the bytes that went through.
type NetworkAttempt struct {
	Host    string `json:"host"`
	Port    int    `json:"port"`
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason,omitempty"`
	Bytes   int64  `json:"bytes"`
}
