package kernels

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/artifacts"
	"github.com/airlock-dev/airlock/internal/idempotency"
	"github.com/airlock-dev/airlock/internal/jupyter"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/internal/sessions"
	"github.com/airlock-dev/airlock/internal/toolcalls"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/state"
)

// sandbox is a sessions backend whose one session "k1" lives until closed.
type sandbox struct {
	mu   sync.Mutex
	open bool
}

func (s *sandbox) Open(context.Context, string, core.Limits, bool) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open = true
	return "k1", nil
}

func (s *sandbox) Close(context.Context, string, string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open = false
	return nil
}

func (s *sandbox) live() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open {
		return core.ErrSessionNotFound
	}
	return nil
}

func (s *sandbox) PutFile(context.Context, string, string, string, io.Reader) (int64, error) {
	return 0, nil
}

func (s *sandbox) GetFile(context.Context, string, string, string, func(int64) io.Writer) (int64, error) {
	return 0, nil
}

func (s *sandbox) ListFiles(context.Context, string, string, string) ([]core.FileEntry, error) {
	return nil, nil
}

func (s *sandbox) InterruptSession(context.Context, string, string) (bool, error) {
	return false, s.live()
}

func (s *sandbox) RestartSession(context.Context, string, string) error { return s.live() }

func (s *sandbox) SessionInfo(context.Context, string, string) (core.SessionInfo, error) {
	return core.SessionInfo{State: "busy", ExecCount: 2}, s.live()
}

// dispatch answers print(1) in a session, busy for "busy".
type dispatch struct{ calls []dispatcher.Call }

func (d *dispatch) Run(_ context.Context, call dispatcher.Call) dispatcher.Result {
	d.calls = append(d.calls, call)
	var args struct{ Code string }
	_ = json.Unmarshal(call.Arguments, &args)
	if args.Code == "busy" {
		return dispatcher.Result{Status: dispatcher.StatusBusy, Content: "busy"}
	}
	return dispatcher.Result{Status: dispatcher.StatusOK, Sandbox: &core.Result{Status: core.StatusOK, Stdout: "1\n", ExecutionCount: 3}}
}

// TestKernelsAreSessions: a kernel opens as a session within the key's
// budgets, runs cells as notebook calls through the dispatcher (rate
// limited, audited as jupyter), answers a platform failure as an error,
// and is not found by another key or after it closed.
func TestKernelsAreSessions(t *testing.T) {
	ctx := context.Background()
	st := state.NewMemory(nil)
	ks, err := keys.New("alice:alice-key-0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	records := sessionrecords.New(st, time.Hour, 0, nil)
	sb, disp := &sandbox{}, &dispatch{}
	calls := toolcalls.New(toolcalls.Config{Grants: toolcalls.Grants{Keys: ks}},
		artifacts.New(artifacts.Config{}, st), records, idempotency.New(st))
	allowed := true
	b := &Backend{Available: true, Service: sessions.New(sb, records, nil, nil), Records: records, Calls: calls,
		Dispatcher: disp, Allow: func(string) bool { return allowed }}
	var _ jupyter.Backend = b

	id, err := b.Open(ctx, "alice", jupyter.Spec{Name: "python"})
	if err != nil || id != "k1" {
		t.Fatalf("open: %q %v", id, err)
	}
	res, err := b.Execute(ctx, "alice", id, jupyter.Cell{Code: "print(1)", AllowStdin: true})
	if err != nil || res.Stdout != "1\n" {
		t.Fatalf("execute: %+v %v", res, err)
	}
	if c := disp.calls[0]; c.SessionID != "k1" || c.Caller != "jupyter" || !c.Notebook || !c.AllowStdin || c.Name != dispatcher.ToolRunPython {
		t.Fatalf("the dispatcher's call: %+v", c)
	}
	if _, err := b.Execute(ctx, "alice", id, jupyter.Cell{Code: "busy"}); !errors.Is(err, core.ErrBusy) {
		t.Fatalf("a busy sandbox: %v", err)
	}
	allowed = false
	if _, err := b.Execute(ctx, "alice", id, jupyter.Cell{Code: "print(1)"}); !errors.Is(err, core.ErrRateLimited) {
		t.Fatalf("past the rate limit: %v", err)
	}
	if k, err := b.Session(ctx, "alice", id); err != nil || k.State != "busy" || k.ExecCount != 2 {
		t.Fatalf("session: %+v %v", k, err)
	}
	if _, err := b.Session(ctx, "bob", id); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("bob's view of alice's kernel: %v", err)
	}
	if err := b.Close(ctx, "alice", id); err != nil {
		t.Fatal(err)
	}
	if l, _ := b.Sessions(ctx, "alice"); len(l) != 0 {
		t.Fatalf("after close: %+v", l)
	}
	if err := b.Interrupt(ctx, "alice", id); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("interrupt after close: %v", err)
	}
}
