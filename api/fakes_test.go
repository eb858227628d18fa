package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// Errors the fake run manager returns; the API maps them by their code.
var (
	errFakeRunNotFound = core.Errorf("fake", core.ErrNotFound, "run not found")
	errFakeNoModel     = core.Errorf("fake", core.ErrNoModel, "no model")
	errFakeConflict    = core.Errorf("fake", core.ErrConflict, "run finished")
)

// fakeDispatcher runs calls with run, or with scripted behaviour keyed by
// the code in the arguments (see scripted).
type fakeDispatcher struct {
	mu    sync.Mutex
	calls []dispatcher.Call
	run   func(ctx context.Context, call dispatcher.Call) dispatcher.Result
}

func (f *fakeDispatcher) Run(ctx context.Context, call dispatcher.Call) dispatcher.Result {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
	if f.run != nil {
		return f.run(ctx, call)
	}
	return scripted(ctx, call)
}

func (f *fakeDispatcher) lastCall() dispatcher.Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[len(f.calls)-1]
}

func (f *fakeDispatcher) ToolsJSON() []map[string]any {
	str := map[string]any{"type": "string"}
	return []map[string]any{
		{"type": "function", "function": map[string]any{"name": "run_python", "description": "Run Python.",
			"parameters": map[string]any{"type": "object", "required": []any{"code"}, "properties": map[string]any{"code": str}}}},
		{"type": "function", "function": map[string]any{"name": "execute_shell", "description": "Run a shell command.",
			"parameters": map[string]any{"type": "object", "required": []any{"command"}, "properties": map[string]any{"command": str}}}},
	}
}

// scripted imitates the dispatcher: unknown tools are rejected; the code
// decides the outcome ("plot" makes a PNG, "raise" fails, "busy",
// "unavailable", "internal", "sleep", "lost", "ended", "approval" ...).
func scripted(ctx context.Context, call dispatcher.Call) dispatcher.Result {
	res := dispatcher.Result{CallID: call.ID, Name: call.Name, DurationMS: 3}
	if call.Name != "run_python" && call.Name != "execute_shell" {
		res.Status, res.Reason = dispatcher.StatusRejected, "unknown_tool"
		res.Content = "unknown tool " + call.Name + "; use run_python or execute_shell"
		return res
	}
	var args map[string]string
	raw := call.Arguments
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s)
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		res.Status, res.Reason, res.Content = dispatcher.StatusRejected, "invalid_json", "arguments are not a JSON object"
		return res
	}
	code := args["code"] + args["command"]
	ok := func(out string) dispatcher.Result {
		res.Status, res.Content = dispatcher.StatusOK, out
		res.Sandbox = &core.Result{Status: core.StatusOK, Stdout: out, DurationMS: 3}
		return res
	}
	switch {
	case strings.Contains(code, "plot"):
		r := ok("plotted\n")
		r.Sandbox.Artifacts = []core.Artifact{pngArtifact("figure-1.png")}
		return r
	case strings.Contains(code, "raise"):
		res.Status, res.Content = dispatcher.StatusError, "Traceback: ValueError: boom"
		res.Sandbox = &core.Result{Status: core.StatusError, ExitCode: 1, Stderr: "ValueError: boom\n"}
		return res
	case strings.Contains(code, "rm -rf /"):
		res.Status, res.Reason, res.Content = dispatcher.StatusRejected, "policy:shell.rm_root", "refused: deleting the root folder"
		return res
	case strings.Contains(code, "approval"):
		res.Status, res.ApprovalToken, res.Content = dispatcher.StatusPendingApproval, "tok-1", "waiting for approval"
		return res
	case strings.Contains(code, "busy"):
		res.Status, res.Err, res.Content = dispatcher.StatusBusy, core.ErrBusy, "busy"
		return res
	case strings.Contains(code, "unavailable"):
		res.Status, res.Err, res.Content = dispatcher.StatusUnavailable, core.ErrUnavailable, "unavailable"
		return res
	case strings.Contains(code, "internal"):
		res.Status, res.Err, res.Content = dispatcher.StatusInternal, errors.New("bug"), "internal error"
		return res
	case strings.Contains(code, "lost"):
		res.Status, res.Err, res.Content = dispatcher.StatusSessionLost, core.ErrSessionLost, "session lost"
		return res
	case strings.Contains(code, "gone"):
		res.Status, res.Err, res.Content = dispatcher.StatusSessionNotFound, core.ErrSessionNotFound, "session not found"
		return res
	case strings.Contains(code, "ended"):
		r := ok("")
		r.Status, r.Sandbox.Status, r.Sandbox.SessionEnded = dispatcher.StatusTimeout, core.StatusTimeout, true
		return r
	case strings.Contains(code, "sleep"):
		<-ctx.Done()
		res.Status, res.Err, res.Content = dispatcher.StatusUnavailable, ctx.Err(), "cancelled"
		return res
	case strings.Contains(code, "panic"):
		panic("fake dispatcher panic")
	}
	return ok("1\n")
}

// pngArtifact returns a real 64x48 PNG as an artifact.
func pngArtifact(name string) core.Artifact {
	data := pngBytes()
	return core.Artifact{Name: name, MIME: "image/png", Size: int64(len(data)), SHA256: "sha-" + name, Data: data}
}

// pngBytes draws a small gradient with a diagonal line.
func pngBytes() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for y := 0; y < 48; y++ {
		for x := 0; x < 64; x++ {
			img.Set(x, y, color.RGBA{uint8(x * 4), uint8(y * 5), 200, 255})
		}
		img.Set(y, y, color.Black)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// fakeSessions keeps sessions and files in memory; err, when set, is
// returned by every call.
type fakeSessions struct {
	mu    sync.Mutex
	n     int
	open  map[string]string // id → owner
	files map[string][]byte // id/path → data
	err   error
	// busy marks sessions running a call; interrupts and restarts count.
	busy       map[string]bool
	interrupts int
	restarts   map[string]int
	bg         map[string]bool // id → opened with background work allowed
	// snapState is the server's state store, where snapshots go
	// (fakes_snapshots_test.go); snapQuota bounds each owner's.
	snapState state.Store
	snapQuota int64
	// openedIn is the environment each session was opened in (OpenIn).
	openedIn map[string]string
}

func newFakeSessions() *fakeSessions {
	return &fakeSessions{open: map[string]string{}, files: map[string][]byte{}, busy: map[string]bool{}, restarts: map[string]int{}}
}

func (f *fakeSessions) Open(ctx context.Context, owner string, limits core.Limits, background bool) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return "", f.err
	}
	if limits.Pids == 7 { // the worker refuses these limits
		return "", fmt.Errorf("%w: pids 7 is not allowed here", core.ErrInvalid)
	}
	f.n++
	id := "ses_" + strings.Repeat("x", 3) + string(rune('a'+f.n%26)) + time.Now().Format("150405.000000000")
	f.open[id] = owner
	if f.bg == nil {
		f.bg = map[string]bool{}
	}
	f.bg[id] = background
	return id, nil
}

func (f *fakeSessions) check(owner, id string) error {
	if f.err != nil {
		return f.err
	}
	if o, ok := f.open[id]; !ok || o != owner {
		return core.ErrSessionNotFound
	}
	return nil
}

func (f *fakeSessions) Close(ctx context.Context, owner, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(owner, id); err != nil {
		return err
	}
	delete(f.open, id)
	return nil
}

func (f *fakeSessions) PutFile(ctx context.Context, owner, id, path string, body io.Reader) (int64, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(owner, id); err != nil {
		return 0, err
	}
	if strings.HasPrefix(path, "bad") {
		return 0, errors.Join(core.ErrInvalid, errors.New("symlink refused"))
	}
	if len(data) > 1<<16 {
		return 0, core.ErrTooLarge
	}
	f.files[id+"/"+path] = data
	return int64(len(data)), nil
}

func (f *fakeSessions) GetFile(ctx context.Context, owner, id, path string, open func(int64) io.Writer) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(owner, id); err != nil {
		return 0, err
	}
	d, ok := f.files[id+"/"+path]
	if !ok {
		return 0, errors.Join(core.ErrInvalid, errors.New("no such file"))
	}
	n, err := open(int64(len(d))).Write(d)
	return int64(n), err
}

// fakeRun is one scripted run: segments of events, the next released by
// each approval.
type fakeRun struct {
	owner    string
	view     wire.Run
	events   []wire.RunEvent
	segments [][]wire.RunEvent
	closed   bool
	changed  chan struct{} // closed and replaced on every change
}

// fakeRuns is a scripted run manager. script builds a run's event segments
// from its request; the run ends with the last segment.
type fakeRuns struct {
	mu         sync.Mutex
	configured bool
	n          int
	runs       map[string]*fakeRun
	script     func(req agent.RunRequest) [][]wire.RunEvent
	lastReq    agent.RunRequest
	startErr   error
}

func newFakeRuns() *fakeRuns {
	return &fakeRuns{configured: true, runs: map[string]*fakeRun{}, script: simpleScript}
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// ev builds an event (Seq is set when appended).
func ev(typ wire.EventType, step int, data any) wire.RunEvent {
	b, _ := json.Marshal(data)
	return wire.RunEvent{Type: typ, Time: t0, Step: step, Data: b}
}

// simpleScript: one step that plots, then the final answer.
func simpleScript(req agent.RunRequest) [][]wire.RunEvent {
	return [][]wire.RunEvent{{
		ev(wire.EventStepStarted, 1, map[string]any{"max_steps": 5}),
		ev(wire.EventAssistantMessage, 1, map[string]any{"content": "Let me look at the data."}),
		ev(wire.EventToolCall, 1, map[string]any{"id": "call_1", "name": "run_python",
			"arguments": `{"code": "import pandas as pd\n# monthly totals\ndf = pd.read_csv('data.csv')\nprint(df.sales.sum())"}`}),
		ev(wire.EventToolResult, 1, map[string]any{"id": "call_1", "name": "run_python", "status": "ok",
			"content": "1234\n", "duration_ms": 12, "artifacts": []core.Artifact{pngArtifact("monthly.png")}}),
		ev(wire.EventStepStarted, 2, map[string]any{"max_steps": 5}),
		ev(wire.EventFinalAnswer, 2, map[string]any{"content": "Total sales were 1234; March was the best month."}),
		ev(wire.EventRunFinished, 2, map[string]any{"status": "done", "steps": 2, "final_answer": "Total sales were 1234; March was the best month."}),
	}}
}

// approvalScript waits for one approval before finishing.
func approvalScript(req agent.RunRequest) [][]wire.RunEvent {
	return [][]wire.RunEvent{
		{
			ev(wire.EventStepStarted, 1, map[string]any{}),
			ev(wire.EventApprovalNeeded, 1, map[string]any{"token": "apv-1", "id": "call_1", "name": "execute_shell", "arguments": `{"command":"ls -la"}`}),
		},
		{
			ev(wire.EventToolResult, 1, map[string]any{"id": "call_1", "name": "execute_shell", "status": "ok", "content": "total 0\n"}),
			ev(wire.EventFinalAnswer, 1, map[string]any{"content": "The folder is empty."}),
			ev(wire.EventRunFinished, 1, map[string]any{"status": "done", "steps": 1}),
		},
	}
}

func (f *fakeRuns) Start(req agent.RunRequest) (wire.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.startErr != nil {
		return wire.Run{}, f.startErr
	}
	if !f.configured {
		return wire.Run{}, errFakeNoModel
	}
	f.lastReq = req
	f.n++
	id := "run_" + string(rune('a'+f.n%26)) + time.Now().Format("150405.000000000")
	r := &fakeRun{owner: req.Owner, changed: make(chan struct{}),
		view: wire.Run{ID: id, Status: wire.RunRunning, Created: t0}}
	r.segments = f.script(req)
	f.runs[id] = r
	f.release(r)
	return r.view, nil
}

// release appends the next segment; after the last one the run ends.
// Callers hold mu.
func (f *fakeRuns) release(r *fakeRun) {
	if len(r.segments) == 0 {
		return
	}
	seg := r.segments[0]
	r.segments = r.segments[1:]
	for _, e := range seg {
		e.Seq = len(r.events) + 1
		r.events = append(r.events, e)
		r.view.Steps = e.Step
		switch e.Type {
		case wire.EventApprovalNeeded:
			var d struct{ Token string }
			_ = json.Unmarshal(e.Data, &d)
			r.view.Status, r.view.PendingApprovals = wire.RunWaitingApproval, []string{d.Token}
		case wire.EventFinalAnswer:
			var d struct{ Content string }
			_ = json.Unmarshal(e.Data, &d)
			r.view.FinalAnswer = d.Content
		}
	}
	if len(r.segments) == 0 {
		r.view.Status, r.view.PendingApprovals, r.view.Ended, r.closed = wire.RunDone, nil, t0.Add(time.Second), true
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

func (f *fakeRuns) get(owner, id string) (*fakeRun, error) {
	r, ok := f.runs[id]
	if !ok || r.owner != owner {
		return nil, errFakeRunNotFound
	}
	return r, nil
}

func (f *fakeRuns) Get(owner, id string) (wire.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.get(owner, id)
	if err != nil {
		return wire.Run{}, err
	}
	return r.view, nil
}

func (f *fakeRuns) Events(ctx context.Context, owner, id string, after int) (<-chan wire.RunEvent, error) {
	f.mu.Lock()
	r, err := f.get(owner, id)
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	ch := make(chan wire.RunEvent)
	go func() {
		defer close(ch)
		next := after
		for {
			f.mu.Lock()
			pending := append([]wire.RunEvent(nil), r.events[min(next, len(r.events)):]...)
			closed, changed := r.closed, r.changed
			f.mu.Unlock()
			for _, e := range pending {
				select {
				case ch <- e:
					next = e.Seq
				case <-ctx.Done():
					return
				}
			}
			if closed {
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}

func (f *fakeRuns) Cancel(owner, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.get(owner, id)
	if err != nil {
		return err
	}
	if r.closed {
		return errFakeConflict
	}
	r.segments = [][]wire.RunEvent{{ev(wire.EventRunFinished, r.view.Steps, map[string]any{"status": "cancelled"})}}
	f.release(r)
	r.view.Status = wire.RunCancelled
	return nil
}

func (f *fakeRuns) Approve(owner, runID, token string, approve bool, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.get(owner, runID)
	if err != nil {
		return err
	}
	if len(r.view.PendingApprovals) == 0 || r.view.PendingApprovals[0] != token {
		return dispatcher.ErrApprovalNotFound
	}
	r.view.Status, r.view.PendingApprovals = wire.RunRunning, nil
	f.release(r)
	return nil
}

func (f *fakeRuns) Configured() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.configured
}

// ListFiles lists the fake's files and folders directly under dir.
func (f *fakeSessions) ListFiles(ctx context.Context, owner, id, dir string) ([]core.FileEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(owner, id); err != nil {
		return nil, err
	}
	prefix := id + "/"
	if dir != "" {
		prefix += dir + "/"
	}
	seen := map[string]bool{}
	var out []core.FileEntry
	for k, d := range f.files {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		name, _, nested := strings.Cut(rest, "/")
		if seen[name] {
			continue
		}
		seen[name] = true
		if nested {
			out = append(out, core.FileEntry{Name: name, Type: "dir"})
		} else {
			out = append(out, core.FileEntry{Name: name, Type: "file", Size: int64(len(d))})
		}
	}
	if dir != "" && len(out) == 0 {
		// As the sandbox's controller: a folder that is not there (or is a
		// file) is refused as invalid.
		return nil, fmt.Errorf("fake: ls %s: %w: No such file or directory", dir, core.ErrInvalid)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
