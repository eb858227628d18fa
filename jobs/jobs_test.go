package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/queue"
	"github.com/airlock-dev/airlock/sandbox"
)

// fakeEngine answers requests from a script and records them.
type fakeEngine struct {
	mu   sync.Mutex
	seen []sandbox.Request
	fn   func(ctx context.Context, req sandbox.Request) (sandbox.Result, error)
}

func (f *fakeEngine) Handle(ctx context.Context, req sandbox.Request) (sandbox.Result, error) {
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
	w, err := q.NewWorker(queue.WorkerConfig{Concurrency: 2}, NewHandler(eng))
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
	eng := &fakeEngine{fn: func(_ context.Context, req sandbox.Request) (sandbox.Result, error) {
		switch req.Code {
		case "gone":
			return sandbox.Result{}, fmt.Errorf("sandbox: session x: %w", sandbox.ErrSessionNotFound)
		case "busy":
			return sandbox.Result{}, fmt.Errorf("too many: %w", sandbox.ErrBusy)
		case "docker":
			return sandbox.Result{}, fmt.Errorf("sandbox: create: %w: boom", sandbox.ErrUnavailable)
		case "bug":
			return sandbox.Result{}, errors.New("something broke")
		}
		return sandbox.Result{Status: sandbox.StatusOK, Stdout: "ran " + req.Code, Artifacts: []sandbox.Artifact{{Name: "a.png", Data: []byte{1, 2}}}}, nil
	}}
	c := stack(t, eng)
	ctx := context.Background()
	res, err := c.Exec(ctx, sandbox.Request{Language: sandbox.Python, Code: "x", Owner: "o"})
	if err != nil || res.Stdout != "ran x" || len(res.Artifacts) != 1 || string(res.Artifacts[0].Data) != "\x01\x02" {
		t.Fatalf("round trip: %+v %v", res, err)
	}
	if eng.seen[0].JobID == "" || eng.seen[0].Owner != "o" {
		t.Fatalf("request not carried whole: %+v", eng.seen[0])
	}
	for code, want := range map[string]error{"gone": sandbox.ErrSessionNotFound, "busy": sandbox.ErrBusy, "docker": sandbox.ErrUnavailable} {
		_, err := c.Exec(ctx, sandbox.Request{Code: code})
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", code, err, want)
		}
	}
	_, err = c.Exec(ctx, sandbox.Request{Code: "bug"})
	if err == nil || errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "something broke") {
		t.Errorf("internal error: %v", err)
	}
}

func TestSessionOpsAndBinding(t *testing.T) {
	open := map[string]bool{}
	var mu sync.Mutex
	eng := &fakeEngine{fn: func(_ context.Context, req sandbox.Request) (sandbox.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		switch req.Op {
		case sandbox.OpSessionOpen:
			if req.Limits.Pids == 7 {
				return sandbox.Result{Status: sandbox.StatusRejected, Message: "limits: pids 7 refused"}, nil
			}
			open["s1"] = true
			return sandbox.Result{Status: sandbox.StatusOK, SessionID: "s1"}, nil
		case sandbox.OpSessionClose:
			delete(open, req.SessionID)
			return sandbox.Result{Status: sandbox.StatusOK}, nil
		case sandbox.OpFileGet:
			return sandbox.Result{Status: sandbox.StatusOK, Data: []byte("content of " + req.Path)}, nil
		case sandbox.OpFilePut:
			return sandbox.Result{Status: sandbox.StatusRejected, Message: "symlink"}, nil
		}
		if !open[req.SessionID] {
			return sandbox.Result{}, sandbox.ErrSessionNotFound
		}
		return sandbox.Result{Status: sandbox.StatusOK, Stdout: "in " + req.SessionID}, nil
	}}
	c := stack(t, eng)
	ctx := context.Background()
	if _, err := c.OpenSession(ctx, "o", sandbox.Limits{Pids: 7}); !errors.Is(err, sandbox.ErrRejected) {
		t.Fatalf("refused open: %v", err)
	}
	id, err := c.OpenSession(ctx, "o", sandbox.Limits{})
	if err != nil || id != "s1" {
		t.Fatalf("open: %q %v", id, err)
	}
	res, err := c.Exec(ctx, sandbox.Request{SessionID: id, Code: "1"})
	if err != nil || res.Stdout != "in s1" {
		t.Fatalf("session call not routed to the holder: %+v %v", res, err)
	}
	data, err := c.GetFile(ctx, "o", id, "a.txt")
	if err != nil || string(data) != "content of a.txt" {
		t.Fatalf("get: %q %v", data, err)
	}
	if err := c.PutFile(ctx, "o", id, "x", nil); !errors.Is(err, sandbox.ErrRejected) {
		t.Fatalf("refused put: %v", err)
	}
	if err := c.CloseSession(ctx, "o", id); err != nil {
		t.Fatal(err)
	}
	// The close unbound the session: the queue now answers session_lost.
	_, err = c.Exec(ctx, sandbox.Request{SessionID: id, Code: "1"})
	if !errors.Is(err, dispatcher.ErrSessionLost) {
		t.Fatalf("call after close: %v", err)
	}
}

func TestCancellationReachesEngine(t *testing.T) {
	started := make(chan struct{})
	saw := make(chan error, 1)
	eng := &fakeEngine{fn: func(ctx context.Context, req sandbox.Request) (sandbox.Result, error) {
		close(started)
		<-ctx.Done()
		saw <- ctx.Err()
		return sandbox.Result{}, ctx.Err()
	}}
	c := stack(t, eng)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := c.Exec(ctx, sandbox.Request{Code: "sleep"}); errc <- err }()
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

func TestQueueErrorsMapToDispatcher(t *testing.T) {
	for _, c := range []struct{ in, want error }{
		{queue.ErrBusy, dispatcher.ErrBusy},
		{queue.ErrUnavailable, dispatcher.ErrUnavailable},
		{queue.ErrSessionLost, dispatcher.ErrSessionLost},
		{queue.ErrClosed, dispatcher.ErrUnavailable},
	} {
		if err := mapQueueErr(fmt.Errorf("x: %w", c.in)); !errors.Is(err, c.want) || !errors.Is(err, c.in) {
			t.Errorf("%v mapped to %v", c.in, err)
		}
	}
}

// TestAbandonedOpenIsClosed: a session opened for a caller who already
// left is closed at once instead of holding a quota slot.
func TestAbandonedOpenIsClosed(t *testing.T) {
	release := make(chan struct{})
	closed := make(chan string, 1)
	eng := &fakeEngine{fn: func(ctx context.Context, req sandbox.Request) (sandbox.Result, error) {
		switch req.Op {
		case sandbox.OpSessionOpen:
			<-ctx.Done() // the caller gives up while the container starts
			<-release
			return sandbox.Result{Status: sandbox.StatusOK, SessionID: "s-late"}, nil
		case sandbox.OpSessionClose:
			closed <- req.SessionID
		}
		return sandbox.Result{Status: sandbox.StatusOK}, nil
	}}
	c := stack(t, eng)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := c.OpenSession(ctx, "o", sandbox.Limits{}); errc <- err }()
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
