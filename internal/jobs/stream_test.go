package jobs

import (
	"context"
	"errors"
	"github.com/airlock-dev/airlock/internal/testscale"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/queue"
)

// sessionEngine is a fake engine with one session whose exec emits events
// and, for code "sleep", blocks until interrupted or cancelled.
type sessionEngine struct {
	mu        sync.Mutex
	running   chan struct{} // closed when a "sleep" call starts
	interrupt chan struct{}
	busy      bool
	execs     int
	sinks     []bool // per exec: whether its context carried a sink
}

func newSessionEngine() *sessionEngine {
	return &sessionEngine{running: make(chan struct{}), interrupt: make(chan struct{})}
}

func (e *sessionEngine) Handle(ctx context.Context, req core.Request) (core.Result, error) {
	switch req.Op {
	case core.OpSessionOpen:
		return core.Result{Status: core.StatusOK, SessionID: "s1"}, nil
	case core.OpSessionInterrupt:
		e.mu.Lock()
		busy := e.busy
		e.mu.Unlock()
		if !busy {
			return core.Result{Status: core.StatusOK}, nil
		}
		e.interrupt <- struct{}{}
		return core.Result{Status: core.StatusOK, Interrupted: true}, nil
	case core.OpSessionRestart:
		return core.Result{Status: core.StatusOK}, nil
	case core.OpSessionInfo:
		e.mu.Lock()
		defer e.mu.Unlock()
		return core.Result{Status: core.StatusOK, Session: &core.SessionInfo{ID: req.SessionID, State: "idle", ExecCount: e.execs}}, nil
	case core.OpFileList:
		return core.Result{Status: core.StatusOK, Entries: []core.FileEntry{{Name: "a.txt", Type: "file", Size: 3}}}, nil
	}
	sink := core.SinkFrom(ctx)
	e.mu.Lock()
	e.execs++
	n := e.execs
	e.sinks = append(e.sinks, sink != nil)
	e.mu.Unlock()
	if req.SessionID != "s1" {
		return core.Result{}, core.ErrSessionNotFound
	}
	if req.Code == "sleep" {
		if sink != nil {
			sink(core.Event{Kind: "stdout", Text: "started\n"})
		}
		e.mu.Lock()
		e.busy = true
		e.mu.Unlock()
		defer func() { e.mu.Lock(); e.busy = false; e.mu.Unlock() }()
		close(e.running)
		select {
		case <-e.interrupt:
			return core.Result{Status: core.StatusError, ExecutionCount: n, Stderr: "KeyboardInterrupt\n",
				Error: &core.ExecError{Name: "KeyboardInterrupt", Traceback: []string{"KeyboardInterrupt"}}}, nil
		case <-ctx.Done():
			// what the sandbox does on a caller who left: interrupt, keep the session
			return core.Result{Status: core.StatusError, ExecutionCount: n}, nil
		}
	}
	for _, s := range []string{"0\n", "1\n"} {
		if sink != nil {
			sink(core.Event{Kind: "stdout", Text: s})
		}
	}
	if sink != nil {
		sink(core.Event{Kind: "display", Data: map[string]string{"text/plain": "42"}})
		sink(core.Event{Kind: "artifact", Artifact: &core.Artifact{Name: "p.png", MIME: "image/png", Size: 3, Data: []byte("png")}})
	}
	return core.Result{Status: core.StatusOK, Stdout: "0\n1\n", ExecutionCount: n}, nil
}

// backends runs f on the in-process queue and on a real redis-server.
func backends(t *testing.T, f func(t *testing.T, mk func(Engine) *Client)) {
	t.Run("memory", func(t *testing.T) { f(t, func(e Engine) *Client { return stack(t, e) }) })
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t, false)
		f(t, func(e Engine) *Client {
			q, err := queue.Open(queue.Config{RedisURL: srv.URL(), Name: "jobs-stream"}, queue.Deps{})
			if err != nil {
				t.Fatal(err)
			}
			return stackOn(t, q, e)
		})
	})
}

func TestEventsReachTheCallersSinkInOrder(t *testing.T) {
	backends(t, testEventsInOrder)
}

func testEventsInOrder(t *testing.T, mk func(Engine) *Client) {
	c := mk(newSessionEngine())
	ctx := context.Background()
	id, err := c.OpenSession(ctx, "o", core.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []core.Event
	sctx := core.WithSink(ctx, func(ev core.Event) { mu.Lock(); got = append(got, ev); mu.Unlock() })
	res, err := c.Exec(sctx, core.Request{SessionID: id, Code: "print"})
	if err != nil || res.Stdout != "0\n1\n" || res.ExecutionCount != 1 {
		t.Fatalf("result %+v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 4 || got[0].Text != "0\n" || got[1].Text != "1\n" || got[2].Data["text/plain"] != "42" || got[3].Artifact == nil {
		t.Fatalf("events %+v", got)
	}
	if got[3].Artifact.Name != "p.png" || got[3].Artifact.Data != nil {
		t.Fatalf("artifact event must name the file without its bytes: %+v", got[3].Artifact)
	}
	// Without a sink the call works and nothing is delivered anywhere.
	if _, err := c.Exec(ctx, core.Request{SessionID: id, Code: "print"}); err != nil {
		t.Fatal(err)
	}
}

// TestNoSinkWhenNobodyListens: in-process, a call whose caller gave no sink
// reaches the engine without one (no events forwarded nor encoded for
// nobody); a caller's sink still reaches it.
func TestNoSinkWhenNobodyListens(t *testing.T) {
	e := newSessionEngine()
	c := stack(t, e)
	ctx := context.Background()
	id, err := c.OpenSession(ctx, "o", core.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, core.Request{SessionID: id, Code: "print"}); err != nil {
		t.Fatal(err)
	}
	sctx := core.WithSink(ctx, func(core.Event) {})
	if _, err := c.Exec(sctx, core.Request{SessionID: id, Code: "print"}); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.sinks) != 2 || e.sinks[0] || !e.sinks[1] {
		t.Fatalf("engine saw a sink per exec %v, want [false true]", e.sinks)
	}
}

func TestInterruptReachesTheRunningSessionCall(t *testing.T) {
	backends(t, testInterrupt)
}

func testInterrupt(t *testing.T, mk func(Engine) *Client) {
	eng := newSessionEngine()
	c := mk(eng)
	ctx := context.Background()
	id, err := c.OpenSession(ctx, "o", core.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c.InterruptSession(ctx, "o", id); err != nil || ok {
		t.Fatalf("interrupt of an idle session: %v %v", ok, err)
	}
	type out struct {
		res core.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		r, err := c.Exec(ctx, core.Request{SessionID: id, Code: "sleep"})
		done <- out{r, err}
	}()
	<-et(t, eng.running)
	start := time.Now()
	ok, err := c.InterruptSession(ctx, "o", id)
	if err != nil || !ok {
		t.Fatalf("interrupt while a call runs: %v %v", ok, err)
	}
	select {
	case o := <-done:
		if o.err != nil || o.res.Error == nil || o.res.Error.Name != "KeyboardInterrupt" {
			t.Fatalf("interrupted call: %+v %v", o.res, o.err)
		}
	case <-time.After(testscale.D(2 * time.Second)):
		t.Fatal("the call did not end after its interrupt")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("interrupt took %v", d)
	}
	info, err := c.SessionInfo(ctx, "o", id)
	if err != nil || info.ID != id || info.ExecCount != 1 {
		t.Fatalf("info %+v %v", info, err)
	}
	if err := c.RestartSession(ctx, "o", id); err != nil {
		t.Fatal(err)
	}
	files, err := c.ListFiles(ctx, "o", id, "")
	if err != nil || len(files) != 1 || files[0].Name != "a.txt" {
		t.Fatalf("files %+v %v", files, err)
	}
}

// TestCallerWhoLeavesKeepsTheSession: cancelling a session call ends that
// call but neither unbinds nor closes the session.
func TestCallerWhoLeavesKeepsTheSession(t *testing.T) {
	eng := newSessionEngine()
	c := stack(t, eng)
	id, err := c.OpenSession(context.Background(), "o", core.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := c.Exec(ctx, core.Request{SessionID: id, Code: "sleep"}); errc <- err }()
	<-et(t, eng.running)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	res, err := c.Exec(context.Background(), core.Request{SessionID: id, Code: "print"})
	if err != nil || res.ExecutionCount != 2 {
		t.Fatalf("the session did not survive its caller leaving: %+v %v", res, err)
	}
}

// et bounds a wait on ch.
func et(t *testing.T, ch chan struct{}) chan struct{} {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testscale.D(5 * time.Second)):
		t.Fatal("timed out waiting")
	}
	return ch
}
