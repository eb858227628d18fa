package jobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/queue"
)

// fakeEngine answers requests from a script and records them.
type fakeEngine struct {
	mu   sync.Mutex
	seen []core.Request
	fn   func(ctx context.Context, req core.Request) (core.Result, error)
}

func (f *fakeEngine) Handle(ctx context.Context, req core.Request) (core.Result, error) {
	f.mu.Lock()
	f.seen = append(f.seen, req)
	f.mu.Unlock()
	return f.fn(ctx, req)
}

// stack runs a memory queue with one worker over eng and returns a client.
func stack(t *testing.T, eng Engine) *Client {
	t.Helper()
	q, err := queue.NewMemory(queue.Config{}, queue.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	return stackOn(t, q, eng)
}

// stackOn runs one worker (two slots) over eng on q and returns a client.
func stackOn(t *testing.T, q queue.Queue, eng Engine) *Client {
	t.Helper()
	w, err := q.NewWorker(queue.WorkerConfig{Concurrency: 2}, NewRunner(eng))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; _ = q.Close() })
	return NewClient(q, ClientConfig{DefaultTimeout: 5 * time.Second, Margin: 5 * time.Second})
}

func TestRoundTripAndErrors(t *testing.T) {
	eng := &fakeEngine{fn: func(_ context.Context, req core.Request) (core.Result, error) {
		switch req.Code {
		case "gone":
			return core.Result{}, fmt.Errorf("sandbox: session x: %w", core.ErrSessionNotFound)
		case "busy":
			return core.Result{}, fmt.Errorf("too many: %w", core.ErrBusy)
		case "docker":
			return core.Result{}, fmt.Errorf("sandbox: create: %w: boom", core.ErrUnavailable)
		case "bug":
			return core.Result{}, errors.New("something broke")
		}
		return core.Result{Status: core.StatusOK, Stdout: "ran " + req.Code, Artifacts: []core.Artifact{{Name: "a.png", Data: []byte{1, 2}}}}, nil
	}}
	c := stack(t, eng)
	ctx := context.Background()
	res, err := c.Exec(ctx, core.Request{Language: core.Python, Code: "x", Owner: "o"})
	if err != nil || res.Stdout != "ran x" || len(res.Artifacts) != 1 || string(res.Artifacts[0].Data) != "\x01\x02" {
		t.Fatalf("round trip: %+v %v", res, err)
	}
	if eng.seen[0].JobID == "" || eng.seen[0].Owner != "o" {
		t.Fatalf("request not carried whole: %+v", eng.seen[0])
	}
	for code, want := range map[string]error{"gone": core.ErrNotFound, "busy": core.ErrBusy, "docker": core.ErrUnavailable} {
		_, err := c.Exec(ctx, core.Request{Code: code})
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", code, err, want)
		}
	}
	_, err = c.Exec(ctx, core.Request{Code: "bug"})
	if err == nil || errors.Is(err, core.ErrUnavailable) || !strings.Contains(err.Error(), "something broke") {
		t.Errorf("internal error: %v", err)
	}
}

func TestSessionOpsAndBinding(t *testing.T) {
	open := map[string]bool{}
	var mu sync.Mutex
	eng := &fakeEngine{fn: func(_ context.Context, req core.Request) (core.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		switch req.Op {
		case core.OpSessionOpen:
			if req.Limits.Pids == 7 {
				return core.Result{Status: core.StatusRejected, Message: "limits: pids 7 refused"}, nil
			}
			open["s1"] = true
			return core.Result{Status: core.StatusOK, SessionID: "s1"}, nil
		case core.OpSessionClose:
			delete(open, req.SessionID)
			return core.Result{Status: core.StatusOK}, nil
		case core.OpFileGet:
			data := []byte("content of " + req.Path)
			return core.Result{Status: core.StatusOK, Data: data, Size: int64(len(data))}, nil
		case core.OpFilePut:
			return core.Result{Status: core.StatusRejected, Message: "symlink"}, nil
		}
		if !open[req.SessionID] {
			return core.Result{}, core.ErrSessionNotFound
		}
		return core.Result{Status: core.StatusOK, Stdout: "in " + req.SessionID}, nil
	}}
	c := stack(t, eng)
	ctx := context.Background()
	if _, err := c.OpenSession(ctx, "o", core.Limits{Pids: 7}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("refused open: %v", err)
	}
	id, err := c.OpenSession(ctx, "o", core.Limits{})
	if err != nil || id != "s1" {
		t.Fatalf("open: %q %v", id, err)
	}
	res, err := c.Exec(ctx, core.Request{SessionID: id, Code: "1"})
	if err != nil || res.Stdout != "in s1" {
		t.Fatalf("session call not routed to the holder: %+v %v", res, err)
	}
	var got bytes.Buffer
	_, err = c.GetFile(ctx, "o", id, "a.txt", func(int64) io.Writer { return &got })
	if err != nil || got.String() != "content of a.txt" {
		t.Fatalf("get: %q %v", got.String(), err)
	}
	if _, err := c.PutFile(ctx, "o", id, "x", strings.NewReader("")); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("refused put: %v", err)
	}
	if err := c.CloseSession(ctx, "o", id); err != nil {
		t.Fatal(err)
	}
	// The close unbound the session: the queue now answers session_lost.
	_, err = c.Exec(ctx, core.Request{SessionID: id, Code: "1"})
	if !errors.Is(err, core.ErrSessionLost) {
		t.Fatalf("call after close: %v", err)
	}
}

func TestCancellationReachesEngine(t *testing.T) {
	started := make(chan struct{})
	saw := make(chan error, 1)
	eng := &fakeEngine{fn: func(ctx context.Context, req core.Request) (core.Result, error) {
		close(started)
		<-ctx.Done()
		saw <- ctx.Err()
		return core.Result{}, ctx.Err()
	}}
	c := stack(t, eng)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := c.Exec(ctx, core.Request{Code: "sleep"}); errc <- err }()
	<-started
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("cancelled call returned no error")
	}
	select {
	case err := <-saw:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("engine saw %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the engine never saw the cancellation")
	}
}

// TestQueueErrorsCarryCodes: queue errors reach the dispatcher with their
// core.Code, without a translation table in between.
func TestQueueErrorsCarryCodes(t *testing.T) {
	for _, c := range []struct{ in, want error }{
		{queue.ErrBusy, core.ErrBusy},
		{queue.ErrUnavailable, core.ErrUnavailable},
		{queue.ErrSessionLost, core.ErrSessionLost},
		{queue.ErrClosed, core.ErrUnavailable},
	} {
		if err := fmt.Errorf("jobs: %w", c.in); !errors.Is(err, c.want) || core.CodeOf(err) != c.want {
			t.Errorf("%v mapped to %v", c.in, err)
		}
	}
}

// TestAbandonedOpenIsClosed: a session opened for a caller who already
// left is closed at once instead of holding a quota slot.
func TestAbandonedOpenIsClosed(t *testing.T) {
	release := make(chan struct{})
	closed := make(chan string, 1)
	eng := &fakeEngine{fn: func(ctx context.Context, req core.Request) (core.Result, error) {
		switch req.Op {
		case core.OpSessionOpen:
			<-ctx.Done() // the caller gives up while the container starts
			<-release
			return core.Result{Status: core.StatusOK, SessionID: "s-late"}, nil
		case core.OpSessionClose:
			closed <- req.SessionID
		}
		return core.Result{Status: core.StatusOK}, nil
	}}
	c := stack(t, eng)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := c.OpenSession(ctx, "o", core.Limits{}); errc <- err }()
	for {
		eng.mu.Lock()
		n := len(eng.seen)
		eng.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	close(release)
	if err := <-errc; err == nil {
		t.Fatal("abandoned open returned a session")
	}
	select {
	case id := <-closed:
		if id != "s-late" {
			t.Fatalf("closed %q", id)
		}
	case <-time.After(time.Minute):
		t.Fatal("the abandoned session was never closed")
	}
}

// The client is the dispatcher's executor.
var _ dispatcher.Executor = (*Client)(nil)

func TestIdempotencyKeyRunsOnce(t *testing.T) {
	var runs sync.WaitGroup
	var mu sync.Mutex
	n := 0
	eng := &fakeEngine{fn: func(_ context.Context, req core.Request) (core.Result, error) {
		mu.Lock()
		n++
		mu.Unlock()
		return core.Result{Status: core.StatusOK, Stdout: "ran"}, nil
	}}
	c := stack(t, eng)
	req := core.Request{Owner: "alice", Code: "x", IdempotencyKey: "call-1"}
	for range 3 {
		runs.Go(func() {
			if _, err := c.Exec(context.Background(), req); err != nil {
				t.Error(err)
			}
		})
	}
	runs.Wait()
	if _, err := c.Exec(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	other := req
	other.Owner = "bob"
	if _, err := c.Exec(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n != 2 {
		t.Fatalf("engine ran %d times, want 2 (once per owner for one key)", n)
	}
}
