package client_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/api"
	"github.com/airlock-dev/airlock/client"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/wire"
)

func TestListSessionsShowsOnlyTheCallers(t *testing.T) {
	ctx := testCtx(t)
	url := serve(t, nil) // a server of its own: its sessions are this test's
	alice, bob := newClient(t, url, keyAlice), newClient(t, url, keyBob)
	var ids []string
	for _, c := range []*client.Client{alice, alice, bob} {
		s, err := c.CreateSession(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.DeleteSession(ctx, s.ID) })
		ids = append(ids, s.ID)
	}
	okCall(t)(alice.CallSessionTool(ctx, ids[0], client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": "x = 1"}}))

	list, err := alice.ListSessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != ids[0] || list[1].ID != ids[1] {
		t.Fatalf("alice lists %+v, want %v oldest first", list, ids[:2])
	}
	first := list[0]
	if first.State != wire.SessionIdle || first.ExecutionCount == nil || *first.ExecutionCount != 1 ||
		first.CPUMS == nil || *first.CPUMS <= 0 || first.MemBytes == nil || *first.MemBytes <= 0 ||
		first.CreatedAt.IsZero() || first.LastUsedAt.Before(first.CreatedAt) || first.AgeSeconds <= 0 {
		t.Fatalf("first session %+v", first)
	}
	if n := list[1].ExecutionCount; n == nil || *n != 0 {
		t.Fatalf("second session ran %v calls, want 0", n)
	}
	list, err = bob.ListSessions(ctx)
	if err != nil || len(list) != 1 || list[0].ID != ids[2] {
		t.Fatalf("bob lists %+v %v, want only %s", list, err, ids[2])
	}
	if err := bob.DeleteSession(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	if list, err = bob.ListSessions(ctx); err != nil || len(list) != 0 {
		t.Fatalf("bob lists %+v %v after closing his session", list, err)
	}
}

func TestInterruptSession(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t, airlockURL, keyAlice)
	s, err := c.CreateSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteSession(ctx, s.ID) })
	okCall(t)(c.CallSessionTool(ctx, s.ID, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": "kept = 'still here'"}}))
	if hit, err := c.InterruptSession(ctx, s.ID); err != nil || hit {
		t.Fatalf("idle session: interrupted=%v %v, want false", hit, err)
	}

	type answer struct {
		res *wire.ToolCallResponse
		err error
	}
	done := make(chan answer, 1)
	start := time.Now()
	go func() {
		res, err := c.CallSessionTool(ctx, s.ID, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": "import time\ntime.sleep(30)"}})
		done <- answer{res, err}
	}()
	// Wait until the session is busy with the call, then interrupt it.
	for {
		got, err := c.GetSession(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == wire.SessionBusy {
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("the session never got busy: %+v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	hit, err := c.InterruptSession(ctx, s.ID)
	if err != nil || !hit {
		t.Fatalf("interrupt during sleep: interrupted=%v %v, want true", hit, err)
	}
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	if r := a.res.Result; r.Status != core.StatusError || r.Error == nil || r.Error.Name != "KeyboardInterrupt" {
		t.Fatalf("interrupted call %+v (error %+v)", r, r.Error)
	}
	if el := time.Since(start); el > 25*time.Second {
		t.Fatalf("the call took %v: the interrupt did not end the sleep", el)
	}
	res := okCall(t)(c.CallSessionTool(ctx, s.ID, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": "print(kept)"}}))
	if res.Result.Stdout != "still here\n" {
		t.Fatalf("after the interrupt: %q", res.Result.Stdout)
	}
	_, err = newClient(t, airlockURL, keyBob).InterruptSession(ctx, s.ID)
	apiError(t, err, http.StatusNotFound, core.ErrNotFound)
}

func TestRestartSession(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t, airlockURL, keyAlice)
	s, err := c.CreateSessionWith(ctx, wire.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Background {
		t.Fatalf("session %+v: background without asking", s)
	}
	t.Cleanup(func() { _ = c.DeleteSession(ctx, s.ID) })
	okCall(t)(c.CallSessionTool(ctx, s.ID, client.ToolCall{Name: "run_python", Arguments: map[string]any{
		"code": "v = 7\nopen('kept.txt', 'w').write('file survives')"}}))
	got, err := c.RestartSession(ctx, s.ID)
	if err != nil || got.ID != s.ID || got.State != wire.SessionIdle {
		t.Fatalf("restart: %+v %v", got, err)
	}
	res, err := c.CallSessionTool(ctx, s.ID, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Result; r.Status != core.StatusError || r.Error == nil || r.Error.Name != "NameError" {
		t.Fatalf("v after restart: %+v (error %+v), want a NameError", r, r.Error)
	}
	res = okCall(t)(c.CallSessionTool(ctx, s.ID, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": "print(open('kept.txt').read())"}}))
	if res.Result.Stdout != "file survives\n" {
		t.Fatalf("file after restart: %q", res.Result.Stdout)
	}
	_, err = newClient(t, airlockURL, keyBob).RestartSession(ctx, s.ID)
	apiError(t, err, http.StatusNotFound, core.ErrNotFound)
}

func TestBackgroundNeedsPolicy(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t, airlockURL, keyAlice)
	_, err := c.CreateSessionWith(ctx, wire.CreateSessionRequest{Background: true})
	ae := apiError(t, err, http.StatusBadRequest, core.ErrInvalid)
	if ae.Details["policy"] != "background" {
		t.Fatalf("details %v", ae.Details)
	}

	// A key whose policy allows it gets a background session, and every
	// route says so.
	keysFile := filepath.Join(t.TempDir(), "keys")
	const keyCarol = "carol-client-key-0123456789a"
	if err := os.WriteFile(keysFile, []byte("carol:"+keyCarol+" background=true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ks, err := keys.Load(keysFile, "")
	if err != nil {
		t.Fatal(err)
	}
	carol := newClient(t, serve(t, func(c *api.Config) { c.Keys = ks }), keyCarol)
	s, err := carol.CreateSessionWith(ctx, wire.CreateSessionRequest{Background: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = carol.DeleteSession(ctx, s.ID) })
	got, err := carol.GetSession(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	list, err := carol.ListSessions(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("list %+v %v", list, err)
	}
	if !s.Background || !got.Background || !list[0].Background {
		t.Fatalf("background: create %v, get %v, list %v", s.Background, got.Background, list[0].Background)
	}
}
