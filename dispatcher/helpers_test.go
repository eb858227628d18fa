package dispatcher

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/core"
)

// fakeExecutor records requests and answers with a fixed result or error,
// or with fn when set.
type fakeExecutor struct {
	mu   sync.Mutex
	reqs []core.Request
	res  core.Result
	err  error
	fn   func(core.Request) (core.Result, error)
}

// Exec implements Executor.
func (f *fakeExecutor) Exec(_ context.Context, req core.Request) (core.Result, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	if f.fn != nil {
		return f.fn(req)
	}
	return f.res, f.err
}

// calls returns how many requests were executed.
func (f *fakeExecutor) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// last returns the last request.
func (f *fakeExecutor) last(t *testing.T) core.Request {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		t.Fatal("executor was not called")
	}
	return f.reqs[len(f.reqs)-1]
}

// okExecutor answers status ok with stdout "done".
func okExecutor() *fakeExecutor {
	return &fakeExecutor{res: core.Result{Status: core.StatusOK, Stdout: "done\n"}}
}

// testConfig is DefaultConfig without reading the host environment.
func testConfig() Config {
	c := DefaultConfig()
	return c
}

// newTestDispatcher builds a dispatcher with cfg and exec, logging to buf.
func newTestDispatcher(t *testing.T, cfg Config, exec Executor) (*Dispatcher, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	var mu sync.Mutex
	h := slog.NewJSONHandler(&lockedWriter{w: &buf, mu: &mu}, nil)
	return New(cfg, exec, slog.New(h)), &buf
}

// lockedWriter serialises writes for concurrent tests.
type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

// Write implements io.Writer.
func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// call builds a Call with args marshalled as an OpenAI-style JSON string.
func call(name string, args any) Call {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	s, _ := json.Marshal(string(b))
	return Call{ID: "call_1", Name: name, Arguments: s, Caller: "test", Owner: "alice"}
}

// sessionCall is call with a session id.
func sessionCall(name string, args any) Call {
	c := call(name, args)
	c.SessionID = "sess-1"
	return c
}
