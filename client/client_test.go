package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"github.com/airlock-dev/airlock/internal/testscale"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/agent/agenttest"
	"github.com/airlock-dev/airlock/api"
	"github.com/airlock-dev/airlock/client"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/wire"
)

// callTimeout bounds one test's requests (a hang guard, not an assertion).
const callTimeout = 3 * time.Minute

// newClient is a client of url as key.
func newClient(t *testing.T, url, key string) *client.Client {
	t.Helper()
	c, err := client.New(url, client.WithAPIKey(key))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testCtx is a context bounded by callTimeout.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	t.Cleanup(cancel)
	return ctx
}

// apiError asserts err is an *APIError with status and code.
func apiError(t *testing.T, err error, status int, code core.Code) *client.APIError {
	t.Helper()
	var ae *client.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T), want an *APIError %d %s", err, err, status, code)
	}
	if ae.StatusCode != status || ae.Code != code || ae.Message == "" {
		t.Fatalf("APIError %d %q %q, want %d %q with a message", ae.StatusCode, ae.Code, ae.Message, status, code)
	}
	if !client.HasCode(err, code) {
		t.Fatalf("HasCode(%v, %s) is false", err, code)
	}
	return ae
}

// okCall returns a function failing t unless a call's code succeeded.
func okCall(t *testing.T) func(*wire.ToolCallResponse, error) *wire.ToolCallResponse {
	return func(res *wire.ToolCallResponse, err error) *wire.ToolCallResponse {
		t.Helper()
		return mustOK(t, res, err)
	}
}

// mustOK fails unless the call's code succeeded.
func mustOK(t *testing.T, res *wire.ToolCallResponse, err error) *wire.ToolCallResponse {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.Status != core.StatusOK {
		t.Fatalf("status %q: stdout %q stderr %q message %q", res.Result.Status, res.Result.Stdout, res.Result.Stderr, res.Message.Content)
	}
	return res
}

func TestMetaRoutes(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t, airlockURL, keyAlice)
	if h, err := c.GetHealth(ctx); err != nil || h.Status != "ok" {
		t.Fatalf("health %+v %v", h, err)
	}
	r, err := c.GetReadiness(ctx)
	if err != nil || r.Status != "ready" || r.Checks["docker"] != "ok" || r.Checks["queue"] != "ok" {
		t.Fatalf("readiness %+v %v", r, err)
	}
	info, err := c.GetInfo(ctx)
	if err != nil || !info.AuthRequired || !info.Sessions || !info.ModelConfigured || info.MaxUploadBytes <= 0 {
		t.Fatalf("info %+v %v", info, err)
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools {
		names[tl.Function.Name] = tl.Type == "function" && json.Valid(tl.Function.Parameters)
	}
	if !names["run_python"] || !names["execute_shell"] {
		t.Fatalf("tools %v", names)
	}
	doc, err := c.GetOpenAPI(ctx)
	if err != nil || !bytes.Equal(doc, bytes.TrimSpace(api.OpenAPI())) {
		t.Fatalf("openapi: %v (%d bytes)", err, len(doc))
	}
}

func TestOneShotCallsAndArtifacts(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t, airlockURL, keyAlice)
	must := okCall(t)
	res := must(c.RunPython(ctx, "print(6*7)"))
	if res.Result.Stdout != "42\n" || res.Message.Role != "tool" || res.Message.ToolCallID == "" || *res.Result.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	// Arguments as OpenAI's JSON string, a shell tool, a caller's id.
	res = must(c.CallTool(ctx, client.ToolCall{ID: "call_1", Name: "execute_shell", Arguments: `{"command":"echo hi"}`}))
	if res.Result.Stdout != "hi\n" || res.Message.ToolCallID != "call_1" {
		t.Fatalf("%+v", res)
	}
	// Failing code is a result, not an error.
	res, err := c.RunPython(ctx, "raise SystemExit(3)")
	if err != nil || res.Result.Status != core.StatusError || *res.Result.ExitCode != 3 {
		t.Fatalf("%+v %v", res, err)
	}
	// A refused call too.
	res, err = c.CallTool(ctx, client.ToolCall{Name: "no_such_tool", Arguments: map[string]any{}})
	if err != nil || res.Result.Status != core.StatusRejected || res.Result.Reason == "" {
		t.Fatalf("%+v %v", res, err)
	}
	// An artifact, downloaded both ways.
	res = must(c.RunPython(ctx, "import matplotlib.pyplot as plt\nplt.plot([1,2,3])\nplt.show()\n"))
	if len(res.Result.Artifacts) != 1 {
		t.Fatalf("artifacts %+v", res.Result.Artifacts)
	}
	a := res.Result.Artifacts[0]
	d, err := c.DownloadArtifact(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(d.Data)
	if hex.EncodeToString(sum[:]) != a.SHA256 || int64(len(d.Data)) != a.Size || d.ContentType != "image/png" || !bytes.HasPrefix(d.Data, []byte("\x89PNG")) {
		t.Fatalf("download %s %d bytes %q, artifact %+v", d.ContentType, len(d.Data), d.Filename, a)
	}
	d2, err := c.GetArtifact(ctx, a.ID)
	if err != nil || !bytes.Equal(d2.Data, d.Data) {
		t.Fatalf("GetArtifact: %v", err)
	}
	// Another key does not see it.
	_, err = newClient(t, airlockURL, keyBob).GetArtifact(ctx, a.ID)
	apiError(t, err, http.StatusNotFound, core.ErrNotFound)
}

func TestSessionLifecycle(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t, airlockURL, keyAlice)
	s, err := c.CreateSession(ctx, &wire.Limits{MemoryBytes: 128 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if s.ID == "" || s.Created.IsZero() || !s.ExpiresAt.After(s.Created) {
		t.Fatalf("session %+v", s)
	}
	t.Cleanup(func() { _ = c.DeleteSession(context.Background(), s.ID) })
	must := okCall(t)
	csv := "month,sales\njan,10\nfeb,20\nmar,12\n"
	w, err := c.PutSessionFile(ctx, s.ID, "in/sales.csv", strings.NewReader(csv))
	if err != nil || w.Path != "in/sales.csv" || w.Size != int64(len(csv)) {
		t.Fatalf("put %+v %v", w, err)
	}
	must(c.CallSessionTool(ctx, s.ID, client.ToolCall{Name: "run_python", Arguments: map[string]any{
		"code": "import pandas as pd\ndf = pd.read_csv('in/sales.csv')\ntotal = int(df.sales.sum())\ndf.to_csv('out.csv', index=False)"}}))
	res := must(c.CallSessionTool(ctx, s.ID, client.ToolCall{Name: "run_python", Arguments: map[string]any{
		"code": "import matplotlib.pyplot as plt\ndf.plot(x='month', y='sales')\nplt.show()\nprint(total)"}}))
	if res.Result.Stdout != "42\n" || res.Result.SessionID != s.ID || len(res.Result.Artifacts) != 1 {
		t.Fatalf("%+v", res.Result)
	}
	a := res.Result.Artifacts[0]
	if !strings.HasPrefix(a.URL, "/v1/sessions/"+s.ID+"/artifacts/") {
		t.Fatalf("artifact url %q", a.URL)
	}
	png, err := c.GetSessionArtifact(ctx, s.ID, a.ID)
	if err != nil || int64(len(png.Data)) != a.Size {
		t.Fatalf("session artifact: %v", err)
	}
	out, err := c.GetSessionFile(ctx, s.ID, "out.csv")
	if err != nil || string(out.Data) != csv || out.Filename != "out.csv" {
		t.Fatalf("get file %+v %v", out, err)
	}
	got, err := c.GetSession(ctx, s.ID)
	if err != nil || got.ID != s.ID || got.LastUsed.Before(s.LastUsed) {
		t.Fatalf("get %+v %v", got, err)
	}
	// Another key's session is not found on any route.
	bob := newClient(t, airlockURL, keyBob)
	_, err = bob.GetSession(ctx, s.ID)
	apiError(t, err, http.StatusNotFound, core.ErrNotFound)
	_, err = bob.CallSessionTool(ctx, s.ID, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": "1"}})
	apiError(t, err, http.StatusNotFound, core.ErrNotFound)
	// A bad path is a 400 naming the problem.
	_, err = c.PutSessionFile(ctx, s.ID, "a/../../etc/x", strings.NewReader("x"))
	apiError(t, err, http.StatusBadRequest, core.ErrInvalid)

	if err := c.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetSession(ctx, s.ID)
	apiError(t, err, http.StatusNotFound, core.ErrNotFound)
	err = c.DeleteSession(ctx, s.ID)
	apiError(t, err, http.StatusNotFound, core.ErrNotFound)
	// Its artifacts outlive it.
	if _, err := c.GetSessionArtifact(ctx, s.ID, a.ID); err != nil {
		t.Fatalf("artifact after close: %v", err)
	}
}

func TestSessionExpiryIsOneTruth(t *testing.T) {
	ctx := testCtx(t)
	url := serve(t, func(c *api.Config) { c.SessionIdleTTL = 2 * time.Second })
	c := newClient(t, url, keyAlice)
	s, err := c.CreateSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shared.jobs.CloseSession(context.Background(), "alice", s.ID) })
	if s.ExpiresAt.Sub(s.LastUsed) != 2*time.Second {
		t.Fatalf("expires_at %v, last_used %v", s.ExpiresAt, s.LastUsed)
	}
	if _, err := c.GetSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(s.ExpiresAt) + 100*time.Millisecond)
	_, err = c.GetSession(ctx, s.ID)
	apiError(t, err, http.StatusNotFound, core.ErrNotFound)
	_, err = c.CallSessionTool(ctx, s.ID, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": "1"}})
	apiError(t, err, http.StatusNotFound, core.ErrNotFound)
	_, err = c.GetSessionFile(ctx, s.ID, "x")
	apiError(t, err, http.StatusNotFound, core.ErrNotFound)
}

func TestErrors(t *testing.T) {
	ctx := testCtx(t)
	// 401: no key and a wrong key.
	anon, err := client.New(airlockURL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = anon.ListTools(ctx)
	apiError(t, err, http.StatusUnauthorized, core.ErrUnauthorized)
	_, err = newClient(t, airlockURL, "wrong-key-000000000000000").RunPython(ctx, "1")
	ae := apiError(t, err, http.StatusUnauthorized, core.ErrUnauthorized)
	if ae.Temporary() || ae.Method != "POST" || ae.Path != "/v1/tool-calls" {
		t.Fatalf("%+v", ae)
	}
	// 404 on unknown ids.
	c := newClient(t, airlockURL, keyAlice)
	_, err = c.GetRun(ctx, "run_nope")
	apiError(t, err, http.StatusNotFound, core.ErrNotFound)
	_, err = c.GetArtifact(ctx, "nope")
	apiError(t, err, http.StatusNotFound, core.ErrNotFound)
	// 400 on a call without a name is caught before sending; a bad limit by the server.
	if _, err := c.CallTool(ctx, client.ToolCall{}); err == nil {
		t.Fatal("empty name accepted")
	}
	_, err = c.CallTool(ctx, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": "1"}, Input: "no-such-folder"})
	apiError(t, err, http.StatusBadRequest, core.ErrInvalid)

	// 413: a body and an upload over the limits.
	small := newClient(t, serve(t, func(c *api.Config) { c.MaxBodyBytes = 4 << 10; c.MaxUploadBytes = 8 << 10 }), keyAlice)
	_, err = small.RunPython(ctx, strings.Repeat("#", 8<<10))
	apiError(t, err, http.StatusRequestEntityTooLarge, core.ErrTooLarge)
	s, err := small.CreateSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer small.DeleteSession(context.Background(), s.ID)
	_, err = small.PutSessionFile(ctx, s.ID, "big.bin", bytes.NewReader(make([]byte, 9<<10)))
	ae = apiError(t, err, http.StatusRequestEntityTooLarge, core.ErrTooLarge)
	if ae.Details["limit_bytes"] != float64(8<<10) {
		t.Fatalf("details %v", ae.Details)
	}

	// 429 rate_limited with Retry-After, once the burst is spent.
	slow := newClient(t, serve(t, func(c *api.Config) { c.RatePerSecond = 0.1; c.RateBurst = 2 }), keyAlice)
	for i := 0; i < 2; i++ {
		if _, err := slow.ListTools(ctx); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	_, err = slow.ListTools(ctx)
	ae = apiError(t, err, http.StatusTooManyRequests, core.ErrRateLimited)
	if ae.RetryAfter < time.Second || ae.RetryAfter > 10*time.Second || !ae.Temporary() {
		t.Fatalf("retry after %v, temporary %v", ae.RetryAfter, ae.Temporary())
	}
}

func TestRunEventsResume(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t, airlockURL, keyAlice)
	shared.model.Add(
		agenttest.CallTools(agenttest.Call{ID: "call_sum", Name: "run_python", Arguments: `{"code":"print(40+2)"}`}),
		agenttest.Say("the answer is 42"),
	)
	run, err := c.CreateRun(ctx, wire.CreateRunRequest{Goal: "add 40 and 2"})
	if err != nil {
		t.Fatal(err)
	}
	var all []wire.RunEvent
	if err := c.FollowRun(ctx, run.ID, 0, func(ev wire.RunEvent) error { all = append(all, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(all) < 4 || all[len(all)-1].Type != wire.EventRunFinished {
		t.Fatalf("events %v", types(all))
	}
	seen := map[wire.EventType]bool{}
	for i, ev := range all {
		if ev.Seq != i+1 {
			t.Fatalf("event %d has seq %d: %v", i, ev.Seq, types(all))
		}
		seen[ev.Type] = true
	}
	if !seen[wire.EventToolCall] || !seen[wire.EventToolResult] || !seen[wire.EventFinalAnswer] {
		t.Fatalf("events %v", types(all))
	}
	got, err := c.GetRun(ctx, run.ID)
	if err != nil || got.Status != wire.RunDone || got.FinalAnswer != "the answer is 42" || got.Ended.IsZero() {
		t.Fatalf("run %+v %v", got, err)
	}

	// One connection read part-way and dropped, then resumed from its last
	// id: the events after it, none repeated.
	s, err := c.StreamRunEvents(ctx, run.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := s.Next(); err != nil {
			t.Fatal(err)
		}
	}
	last := s.LastEventID()
	_ = s.Close()
	if last != 2 {
		t.Fatalf("last id %d", last)
	}
	var rest []wire.RunEvent
	if err := c.FollowRun(ctx, run.ID, last, func(ev wire.RunEvent) error { rest = append(rest, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(rest) != len(all)-2 || rest[0].Seq != 3 || rest[len(rest)-1].Type != wire.EventRunFinished {
		t.Fatalf("resumed %v, all %v", types(rest), types(all))
	}
	// Resuming at the end: nothing more, and the stream ends.
	s, err = c.StreamRunEvents(ctx, run.ID, int64(all[len(all)-1].Seq))
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := s.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the end: %+v %v", ev, err)
	}
	_ = s.Close()
	// Another key does not see the run.
	_, err = newClient(t, airlockURL, keyBob).StreamRunEvents(ctx, run.ID, 0)
	apiError(t, err, http.StatusNotFound, core.ErrNotFound)
	// Cancelling a finished run changes nothing; an unknown approval is not found.
	if got, err := c.CancelRun(ctx, run.ID); err != nil || got.Status != wire.RunDone {
		t.Fatalf("cancel after the end: %+v %v", got, err)
	}
	_, err = c.DecideApproval(ctx, run.ID, "apv-nope", true, "fine")
	apiError(t, err, http.StatusNotFound, core.ErrNotFound)
	_, err = c.DecideApproval(ctx, "run_nope", "apv-nope", true, "")
	apiError(t, err, http.StatusNotFound, core.ErrNotFound)
}

func TestCancelRun(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t, airlockURL, keyAlice)
	release := make(chan struct{})
	defer close(release)
	shared.model.Add(func(agenttest.Request) agenttest.Reply { <-release; return agenttest.Reply{Content: "late"} })
	asked := len(shared.model.Requests())
	run, err := c.CreateRun(ctx, wire.CreateRunRequest{Goal: "wait"})
	if err != nil {
		t.Fatal(err)
	}
	// Cancel once the model holds the request, so the scripted turn is used
	// by this run and no other test's.
	for deadline := time.Now().Add(testscale.D(time.Minute)); len(shared.model.Requests()) == asked; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the run never asked the model")
		}
	}
	got, err := c.CancelRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	final := got
	for deadline := time.Now().Add(testscale.D(time.Minute)); final.Status == wire.RunRunning && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if final, err = c.GetRun(ctx, run.ID); err != nil {
			t.Fatal(err)
		}
	}
	if final.Status != wire.RunCancelled {
		t.Fatalf("run %+v", final)
	}
}

// types lists the event types for failure messages.
func types(evs []wire.RunEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, string(e.Type))
	}
	return out
}

// countingTransport counts the requests whose path ends with suffix.
type countingTransport struct {
	suffix string
	n      atomic.Int32
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, c.suffix) {
		c.n.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestFollowRunReconnects follows a run whose streams the server ends
// early (a short stream timeout): FollowRun reconnects with Last-Event-ID
// and hands every event over once, in order, through run_finished.
func TestFollowRunReconnects(t *testing.T) {
	ctx := testCtx(t)
	url := serve(t, func(c *api.Config) { c.StreamTimeout = 400 * time.Millisecond })
	ct := &countingTransport{suffix: "/events"}
	c, err := client.New(url, client.WithAPIKey(keyAlice), client.WithHTTPClient(&http.Client{Transport: ct}))
	if err != nil {
		t.Fatal(err)
	}
	slow := func(text string) agenttest.Turn {
		return func(agenttest.Request) agenttest.Reply {
			time.Sleep(time.Second)
			return agenttest.Reply{Content: text}
		}
	}
	shared.model.Add(
		func(r agenttest.Request) agenttest.Reply {
			time.Sleep(time.Second)
			return agenttest.Reply{Calls: []agenttest.Call{{ID: "call_x", Name: "run_python", Arguments: `{"code":"print(1)"}`}}}
		},
		slow("finally"),
	)
	run, err := c.CreateRun(ctx, wire.CreateRunRequest{Goal: "slowly"})
	if err != nil {
		t.Fatal(err)
	}
	var evs []wire.RunEvent
	if err := c.FollowRun(ctx, run.ID, 0, func(ev wire.RunEvent) error { evs = append(evs, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if ev.Seq != i+1 {
			t.Fatalf("event %d has seq %d: %v", i, ev.Seq, types(evs))
		}
	}
	if len(evs) < 4 || evs[len(evs)-1].Type != wire.EventRunFinished {
		t.Fatalf("events %v", types(evs))
	}
	if n := ct.n.Load(); n < 2 {
		t.Fatalf("%d connections: the stream was never resumed", n)
	}
}
