package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/airlock-dev/airlock/core"
)

// fakeExec is an Executor for unit tests: sessions are ids, code is
// matched by substrings.
type fakeExec struct {
	mu      sync.Mutex
	n       int
	open    map[string]bool
	closed  []string
	reqs    []core.Request
	started chan struct{} // receives when a "sleep" call starts
	stopped chan error    // receives the ctx error when a "sleep" call ends
}

func newFakeExec() *fakeExec {
	return &fakeExec{open: map[string]bool{}, started: make(chan struct{}, 4), stopped: make(chan error, 4)}
}

// pngBytes is a PNG signature; the fake's figures need not be decodable.
var pngBytes = []byte("\x89PNG\r\n\x1a\nfake")

func (f *fakeExec) Exec(ctx context.Context, req core.Request) (core.Result, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	switch req.Op {
	case core.OpSessionOpen:
		f.mu.Lock()
		defer f.mu.Unlock()
		f.n++
		id := fmt.Sprintf("s-%d", f.n)
		f.open[id] = true
		return core.Result{Status: core.StatusOK, SessionID: id}, nil
	case core.OpSessionClose:
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.open, req.SessionID)
		f.closed = append(f.closed, req.SessionID)
		return core.Result{Status: core.StatusOK}, nil
	case core.OpFileGet:
		if req.Path == "outputs/a.csv" {
			return core.Result{Status: core.StatusOK, Data: []byte("x,y\n1,2\n")}, nil
		}
		return core.Result{}, fmt.Errorf("no such file: %w", core.ErrInvalid)
	}
	f.mu.Lock()
	live := req.SessionID == "" || f.open[req.SessionID]
	f.mu.Unlock()
	if !live {
		return core.Result{}, fmt.Errorf("fake: %w", core.ErrSessionNotFound)
	}
	code := req.Code
	switch {
	case strings.Contains(code, "os.walk"): // list_directory
		return core.Result{Status: core.StatusOK, Stdout: "/work:\ndir   outputs/\nfile  outputs/a.csv (8 bytes)\n"}, nil
	case strings.Contains(code, "sleep"):
		f.started <- struct{}{}
		<-ctx.Done()
		f.stopped <- ctx.Err()
		return core.Result{}, fmt.Errorf("fake: call abandoned: %w", ctx.Err())
	case strings.Contains(code, "plot"):
		return core.Result{Status: core.StatusOK, Artifacts: []core.Artifact{
			{Name: "figure-1.png", MIME: "image/png", Size: int64(len(pngBytes)), Data: pngBytes},
			{Name: "outputs/a.csv", MIME: "text/csv", Size: 8, Data: []byte("x,y\n1,2\n")},
		}}, nil
	case strings.Contains(code, "boom"):
		return core.Result{Status: core.StatusError, ExitCode: 1, Stderr: "ZeroDivisionError\n"}, nil
	}
	return core.Result{Status: core.StatusOK, Stdout: "1\n"}, nil
}

// sessionsUsed returns the distinct session ids of exec requests.
func (f *fakeExec) sessionsUsed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, r := range f.reqs {
		if r.Op == core.OpExec && r.SessionID != "" && !seen[r.SessionID] {
			seen[r.SessionID] = true
			out = append(out, r.SessionID)
		}
	}
	return out
}

// closedSessions returns the sessions closed so far.
func (f *fakeExec) closedSessions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.closed...)
}
