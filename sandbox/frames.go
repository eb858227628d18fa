package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/airlock-dev/airlock/core"
)

// ctlRequest is one line on the controller's stdin; see
// images/python/PROTOCOL.md for every field.
type ctlRequest struct {
	ID               string            `json:"id"`
	Op               string            `json:"op"`
	Mode             string            `json:"mode,omitempty"`
	Lang             string            `json:"lang,omitempty"`
	Code             string            `json:"code,omitempty"`
	Env              map[string]string `json:"env,omitempty"`
	Stdin            string            `json:"stdin,omitempty"`
	TimeoutMS        int64             `json:"timeout_ms,omitempty"`
	HardOutputBytes  int64             `json:"hard_output_bytes,omitempty"`
	MaxArtifacts     int               `json:"max_artifacts,omitempty"`
	MaxArtifactBytes int               `json:"max_artifact_bytes,omitempty"`
	Background       bool              `json:"background,omitempty"`
	Generated        bool              `json:"generated,omitempty"`
	Path             string            `json:"path,omitempty"`
	Data             []byte            `json:"data,omitempty"`
	MaxBytes         int64             `json:"max_bytes,omitempty"`
	Offset           int64             `json:"offset,omitempty"`
	Length           int64             `json:"length,omitempty"`
	// InlineMax (snapshot) asks for the parts in the done frame when
	// together they are at most this many bytes (featureSnapInline).
	InlineMax int64 `json:"inline_max,omitempty"`
	// Archive (tar, tar.gz or zip) is unpacked into /workspace before a
	// one-shot exec runs, within the three bounds.
	Archive           []byte `json:"archive,omitempty"`
	ArchiveMaxEntries int    `json:"archive_max_entries,omitempty"`
	ArchiveMaxBytes   int64  `json:"archive_max_bytes,omitempty"`
	ArchiveMaxRatio   int64  `json:"archive_max_ratio,omitempty"`
	// ArchiveSize (the first stage op of a streamed input) is the whole
	// tar's size; ArchiveStream (the exec after it) the bytes staged, which
	// the controller checks before the call runs (input_stream.go).
	ArchiveSize   int64 `json:"archive_size,omitempty"`
	ArchiveStream int64 `json:"archive_stream,omitempty"`
	// Abort (stage op) drops an unfinished streamed input.
	Abort bool `json:"abort,omitempty"`
	// AllowStdin (session exec): input() asks Airlock with an
	// input_request frame instead of reading stdin.
	AllowStdin bool `json:"allow_stdin,omitempty"`
	// Notebook: the last value as a display frame with "result" (not
	// printed), figures as display frames (core.Request.Notebook).
	Notebook bool `json:"notebook,omitempty"`
	// What, CursorPos and DetailLevel are an introspect request's
	// question about Code; Value is an input_reply's answer.
	What        string `json:"what,omitempty"`
	CursorPos   int    `json:"cursor_pos,omitempty"`
	DetailLevel int    `json:"detail_level,omitempty"`
	Value       string `json:"value,omitempty"`
	// Part names a snapshot file (snapread, snapwrite: "ns" or "work"). A
	// restore's Mode is "namespace" or "files".
	Part string `json:"part,omitempty"`
}

// ctlArtifact is an artifact as the controller reports it; Go re-checks it.
type ctlArtifact struct {
	Name   string `json:"name"`
	MIME   string `json:"mime"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Data   []byte `json:"data"`
}

// ctlFrame is one line from the controller: ready, out, display or done.
type ctlFrame struct {
	T    string          `json:"t"`
	ID   string          `json:"id"`
	S    string          `json:"s"`
	D    string          `json:"d"`
	Data json.RawMessage `json:"data"`
	// ready
	BootMS   float64  `json:"boot_ms"`
	Warnings []string `json:"warnings"`
	Features []string `json:"features"` // what the controller supports beyond the base protocol
	// done of exec
	Status          string          `json:"status"`
	ExitCode        int             `json:"exit_code"`
	Error           *core.ExecError `json:"error"`
	ExecutionCount  int             `json:"execution_count"`
	DurationMS      float64         `json:"duration_ms"`
	Artifacts       []ctlArtifact   `json:"artifacts"`
	KernelRestarted bool            `json:"kernel_restarted"`
	Message         string          `json:"message"`
	CPUSeconds      float64         `json:"cpu_seconds"` // the call's processes, as the controller measured them
	Archive         *ctlUnpacked    `json:"archive"`     // what the call's archive unpacked to
	// Trace is the controller's per-phase timing of the call (AIRLOCK_TRACE=1):
	// ms since it read the request at the end of each phase, and prev_* the
	// ms the previous call's work after its done frame took (phases.go).
	Trace map[string]float64 `json:"trace"`
	// done of other ops
	Fail    string           `json:"fail"`
	Code    string           `json:"code"` // with Fail: a core.Code (the call was refused, nothing ran)
	Size    int64            `json:"size"`
	SHA256  string           `json:"sha256"`
	Entries []core.FileEntry `json:"entries"`
	Pong    bool             `json:"pong"`
	Reply   json.RawMessage  `json:"reply"` // introspect: the kernel's answer
	Taken   bool             `json:"taken"` // input_reply: a call was waiting for it
	// stretch (during an exec): ms the controller moved the code's deadline
	// for time the code waited for a CPU
	MS int64 `json:"ms"`
	// input_request (during an exec)
	Prompt   string `json:"prompt"`
	Password bool   `json:"password"`
	// display: the cell's value (notebook); clear_output: its wait flag
	Result      bool    `json:"result"`
	Wait        bool    `json:"wait"`
	Interrupted bool    `json:"interrupted"`
	Procs       int     `json:"procs"`
	CPUMS       float64 `json:"cpu_ms"`
	MemBytes    int64   `json:"mem_bytes"`
	// snapshot and restore: the kernel's report, the work folder's
	// entries and (snapshot) each part's size and digest
	Names       []string               `json:"names"`
	Modules     map[string]string      `json:"modules"`
	Skipped     []core.SnapshotSkip    `json:"skipped"`
	SnapEntries int                    `json:"work_entries"`
	Parts       map[string]ctlSnapPart `json:"parts"`
	// Inline holds a small snapshot's parts (featureSnapInline).
	Inline map[string][]byte `json:"inline"`
}

// ctlSnapPart is one snapshot file as the controller wrote it.
type ctlSnapPart struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// ctlUnpacked is what the controller unpacked from a call's archive.
type ctlUnpacked struct {
	Format   string  `json:"format"`
	Entries  int     `json:"entries"`
	Bytes    int64   `json:"bytes"`
	UnpackMS float64 `json:"unpack_ms"`
}

// featureArchive (in the ready frame's "features"): the controller unpacks
// a one-shot exec's archive into its own /workspace.
const featureArchive = "archive"

// featureArchiveStream (in the ready frame's "features"): the controller
// takes an input folder's tar in stage ops and unpacks it as it arrives.
const featureArchiveStream = "archive_stream"

// featureStarted (in the ready frame's "features"): the controller sends
// "started" when an exec's code reaches its kernel.
const featureStarted = "started"

// bytesData decodes a done frame's base64 "data" (get op).
func (f *ctlFrame) bytesData() ([]byte, error) {
	if len(f.Data) == 0 || string(f.Data) == "null" {
		return nil, nil
	}
	var b []byte
	if err := json.Unmarshal(f.Data, &b); err != nil {
		return nil, fmt.Errorf("sandbox: file data: %w", err)
	}
	return b, nil
}

// displayData decodes a display frame's MIME bundle.
func (f *ctlFrame) displayData() (map[string]string, error) {
	var m map[string]string
	if err := json.Unmarshal(f.Data, &m); err != nil {
		return nil, fmt.Errorf("sandbox: display data: %w", err)
	}
	return m, nil
}

// errLineTooLong: a controller line went past its size budget.
var errLineTooLong = errors.New("sandbox: controller frame over its size budget")

// lineReader cuts the link's byte stream into controller lines. It keeps
// its place across read errors so a deadline can fire mid-line.
type lineReader struct {
	r    io.Reader
	buf  []byte // buf[off:] is unread
	off  int
	scan int // buf[off:scan] holds no newline
}

// lineChunk is the least free room a read gets.
const lineChunk = 64 << 10

// next returns the next complete line (without "\n"), valid until the
// following call. A line longer than limit is an error.
func (l *lineReader) next(limit int) ([]byte, error) {
	for {
		if i := bytes.IndexByte(l.buf[l.scan:], '\n'); i >= 0 {
			end := l.scan + i
			line := l.buf[l.off:end]
			l.off, l.scan = end+1, end+1
			return line, nil
		}
		l.scan = len(l.buf)
		if len(l.buf)-l.off > limit {
			return nil, errLineTooLong
		}
		if l.off > 0 { // move the partial line to the front
			n := copy(l.buf, l.buf[l.off:])
			l.buf, l.scan, l.off = l.buf[:n], n, 0
		}
		if cap(l.buf)-len(l.buf) < lineChunk {
			l.buf = slices.Grow(l.buf, max(lineChunk, len(l.buf)))
		}
		n, err := l.r.Read(l.buf[len(l.buf):cap(l.buf)])
		l.buf = l.buf[:len(l.buf)+n]
		if n == 0 && err != nil {
			return nil, err
		}
	}
}
