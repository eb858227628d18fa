package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
)

// callSSE is one parsed Server-Sent Event.
type callSSE struct {
	Event string
	Data  string
}

// parseSSE splits an event stream; comment lines are skipped.
func parseCallSSE(t *testing.T, body []byte) []callSSE {
	t.Helper()
	var out []callSSE
	var cur callSSE
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Event != "" || cur.Data != "" {
				out = append(out, cur)
			}
			cur = callSSE{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data += strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if cur.Event != "" {
		t.Fatalf("stream ends inside an event: %+v", cur)
	}
	return out
}

// emitting is a dispatcher run that streams two lines, a display item and
// an artifact, then answers like a rich Python result.
func emitting(ctx context.Context, call dispatcher.Call) dispatcher.Result {
	emit(ctx, core.Event{Kind: "stdout", Text: "0\n"})
	emit(ctx, core.Event{Kind: "stderr", Text: "warn\n"})
	emit(ctx, core.Event{Kind: "stdout", Text: "1\n"})
	emit(ctx, core.Event{Kind: "display", Data: map[string]string{"text/plain": "42", "text/html": "<b>42</b>"}})
	emit(ctx, core.Event{Kind: "artifact", Artifact: &core.Artifact{Name: "p.png", MIME: "image/png", Size: 3}})
	emit(ctx, core.Event{Kind: "bogus", Text: "x"})
	sb := &core.Result{Status: core.StatusError, ExitCode: 1, Stdout: "0\n1\n", Stderr: "warn\nZeroDivisionError: division by zero\n",
		ExecutionCount: 4, Dropped: core.Dropped{Stdout: 10},
		Error:   &core.ExecError{Name: "ZeroDivisionError", Value: "division by zero", Traceback: []string{"Traceback", "ZeroDivisionError: division by zero"}},
		Display: []core.Display{{Data: map[string]string{"text/plain": "42", "text/html": "<b>42</b>"}}}}
	return dispatcher.Result{CallID: call.ID, Name: call.Name, Status: dispatcher.StatusError, Content: "boom", Sandbox: sb, DurationMS: 5}
}

func TestToolCallStreams(t *testing.T) {
	h := newHarness(t, nil)
	h.disp.run = emitting
	body := call("run_python", "code", "x")
	body["id"] = "call_1"
	plain := h.do(keyAlice, "POST", "/v1/tool-calls", body).must(t, http.StatusOK)
	for _, how := range []struct{ path, accept string }{
		{"/v1/tool-calls", "text/event-stream"},
		{"/v1/tool-calls?stream=true", ""},
	} {
		// a key of its own: the same call id and body would be a retry of
		// the plain call (replayed, not run)
		r := h.do(keyAlice, "POST", how.path, body, "Accept", how.accept, "Idempotency-Key", how.path).must(t, http.StatusOK)
		if ct := r.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("%s: content type %q", how.path, ct)
		}
		evs := parseCallSSE(t, r.Body)
		var kinds []string
		for _, e := range evs {
			kinds = append(kinds, e.Event)
		}
		if got := strings.Join(kinds, ","); got != "stdout,stderr,stdout,display,artifact,result" {
			t.Fatalf("%s: events %s", how.path, got)
		}
		var ev core.Event
		if err := json.Unmarshal([]byte(evs[0].Data), &ev); err != nil || ev.Kind != "stdout" || ev.Text != "0\n" {
			t.Fatalf("stdout event %q", evs[0].Data)
		}
		if err := json.Unmarshal([]byte(evs[3].Data), &ev); err != nil || ev.Data["text/html"] != "<b>42</b>" {
			t.Fatalf("display event %q", evs[3].Data)
		}
		if !jsonEqual(t, []byte(evs[5].Data), plain.Body) {
			t.Fatalf("result event differs from the plain answer:\n%s\n%s", evs[5].Data, plain.Body)
		}
	}
	res := plain.JSON(t)["result"].(map[string]any)
	e, _ := res["error"].(map[string]any)
	if e == nil || e["name"] != "ZeroDivisionError" || len(e["traceback"].([]any)) != 2 || res["execution_count"] != float64(4) {
		t.Fatalf("structured fields missing: %v", res)
	}
	if d := res["dropped"].(map[string]any); d["stdout"] != float64(10) || d["stderr"] != float64(0) {
		t.Fatalf("dropped %v", d)
	}
	if len(res["display"].([]any)) != 1 {
		t.Fatalf("display %v", res["display"])
	}
}

func TestToolCallStreamErrors(t *testing.T) {
	h := newHarness(t, nil)
	// A bad request is refused before the stream starts: a JSON error.
	r := h.do(keyAlice, "POST", "/v1/tool-calls?stream=true", map[string]any{"function": map[string]any{"name": ""}}).must(t, http.StatusBadRequest)
	if h.do(keyAlice, "POST", "/v1/sessions/ses_nope/tool-calls", py("1"), "Accept", "text/event-stream").Code != http.StatusNotFound {
		t.Fatal("unknown session must be 404 before streaming")
	}
	_ = r
	// A platform failure during the call ends the stream with an error event.
	r = h.do(keyAlice, "POST", "/v1/tool-calls", py("busy"), "Accept", "text/event-stream").must(t, http.StatusOK)
	evs := parseCallSSE(t, r.Body)
	if len(evs) != 1 || evs[0].Event != "error" {
		t.Fatalf("events %+v", evs)
	}
	var m struct {
		Status int `json:"status"`
		Error  struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(evs[0].Data), &m); err != nil || m.Status != http.StatusTooManyRequests || m.Error.Code != string(core.ErrBusy) {
		t.Fatalf("error event %q", evs[0].Data)
	}
}

// TestStreamedEventsArriveLive: the first event reaches the client while
// the call still runs.
func TestStreamedEventsArriveLive(t *testing.T) {
	h := newHarness(t, nil)
	release := make(chan struct{})
	h.disp.run = func(ctx context.Context, call dispatcher.Call) dispatcher.Result {
		emit(ctx, core.Event{Kind: "stdout", Text: "first\n"})
		<-release
		return dispatcher.Result{CallID: call.ID, Status: dispatcher.StatusOK, Sandbox: &core.Result{Status: core.StatusOK, Stdout: "first\n"}}
	}
	srv := httptest.NewServer(h.srv)
	defer srv.Close()
	b, _ := json.Marshal(py("x"))
	req, _ := http.NewRequest("POST", srv.URL+"/v1/tool-calls", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	req.Header.Set("Accept", "text/event-stream")
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	deadline := time.AfterFunc(5*time.Second, func() { close(release) })
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before the first event: %v", err)
		}
		if strings.HasPrefix(line, "data: ") {
			if !strings.Contains(line, "first") {
				t.Fatalf("first data %q", line)
			}
			break
		}
	}
	if !deadline.Stop() {
		t.Fatal("the first event only came when the call ended")
	}
	close(release)
	rest := new(bytes.Buffer)
	_, _ = rest.ReadFrom(br)
	if !strings.Contains(rest.String(), "event: result") {
		t.Fatalf("no result event: %s", rest)
	}
}

// TestDisconnectKeepsSession: a client that leaves a streamed session call
// cancels it, and the session stays usable.
func TestDisconnectKeepsSession(t *testing.T) {
	h := newHarness(t, nil)
	id := h.openSession(keyAlice)
	started := make(chan struct{}, 1)
	h.disp.run = func(ctx context.Context, call dispatcher.Call) dispatcher.Result {
		if strings.Contains(string(call.Arguments), "sleep") {
			started <- struct{}{}
			<-ctx.Done()
			return dispatcher.Result{CallID: call.ID, Status: dispatcher.StatusUnavailable, Err: ctx.Err(), Content: "canceled"}
		}
		return scripted(ctx, call)
	}
	for _, accept := range []string{"text/event-stream", "application/json"} {
		b, _ := json.Marshal(py("sleep(300)"))
		ctx, cancel := context.WithCancel(context.Background())
		req := httptest.NewRequestWithContext(ctx, "POST", "/v1/sessions/"+id+"/tool-calls", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+keyAlice)
		req.Header.Set("Accept", accept)
		done := make(chan struct{})
		go func() { defer close(done); serve(h.srv, req) }()
		<-started
		cancel()
		<-done
		h.do(keyAlice, "GET", "/v1/sessions/"+id, nil).must(t, http.StatusOK)
		h.do(keyAlice, "POST", "/v1/sessions/"+id+"/tool-calls", py("print(1)")).must(t, http.StatusOK)
	}
}

func TestInterruptRestartAndList(t *testing.T) {
	h := newHarness(t, nil)
	a1 := h.openSession(keyAlice)
	h.clock.Advance(time.Second)
	a2 := h.openSession(keyAlice)
	b1 := h.openSession(keyBob)

	m := h.do(keyAlice, "POST", "/v1/sessions/"+a1+"/interrupt", nil).must(t, http.StatusOK).JSON(t)
	if m["interrupted"] != false {
		t.Fatalf("idle interrupt %v", m)
	}
	h.sess.setBusy(a1, true)
	if m := h.do(keyAlice, "POST", "/v1/sessions/"+a1+"/interrupt", nil).must(t, http.StatusOK).JSON(t); m["interrupted"] != true {
		t.Fatalf("busy interrupt %v", m)
	}
	if h.sess.interrupts != 1 {
		t.Fatalf("interrupts %d", h.sess.interrupts)
	}
	for _, p := range []string{"/v1/sessions/" + b1 + "/interrupt", "/v1/sessions/ses_nope/interrupt", "/v1/sessions/" + b1 + "/restart"} {
		if r := h.do(keyAlice, "POST", p, nil); r.Code != http.StatusNotFound || r.errCode(t) != core.ErrNotFound {
			t.Fatalf("%s: %d %s", p, r.Code, r.Body)
		}
	}
	if h.do("", "POST", "/v1/sessions/"+a1+"/interrupt", nil).Code != http.StatusUnauthorized {
		t.Fatal("interrupt without a key")
	}

	v := h.do(keyAlice, "POST", "/v1/sessions/"+a2+"/restart", nil).must(t, http.StatusOK).JSON(t)
	if v["id"] != a2 || v["execution_count"] != float64(4) || h.sess.restarts[a2] != 1 {
		t.Fatalf("restart %v", v)
	}

	h.clock.Advance(2 * time.Second)
	l := h.do(keyAlice, "GET", "/v1/sessions", nil).must(t, http.StatusOK).JSON(t)["sessions"].([]any)
	if len(l) != 2 {
		t.Fatalf("alice sees %d sessions: %v", len(l), l)
	}
	first := l[0].(map[string]any)
	if first["id"] != a1 || first["state"] != "busy" || first["age_seconds"] != float64(3) ||
		first["created_at"] == nil || first["last_used_at"] == nil || first["cpu_ms"] != 12.5 || first["mem_bytes"] != float64(1<<20) {
		t.Fatalf("listed session %v", first)
	}
	if l[1].(map[string]any)["state"] != "idle" {
		t.Fatalf("second %v", l[1])
	}
	if l := h.do(keyBob, "GET", "/v1/sessions", nil).must(t, http.StatusOK).JSON(t)["sessions"].([]any); len(l) != 1 || l[0].(map[string]any)["id"] != b1 {
		t.Fatalf("bob sees %v", l)
	}

	// The sandbox lost a2: GET tells the truth and the list drops it.
	h.sess.forget(a2)
	h.do(keyAlice, "GET", "/v1/sessions/"+a2, nil).must(t, http.StatusNotFound)
	if l := h.do(keyAlice, "GET", "/v1/sessions", nil).must(t, http.StatusOK).JSON(t)["sessions"].([]any); len(l) != 1 {
		t.Fatalf("after loss: %v", l)
	}
}

// jsonEqual compares two JSON documents by value.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// emit sends ev to the sink ctx carries, as the sandbox does.
func emit(ctx context.Context, ev core.Event) {
	if s := core.SinkFrom(ctx); s != nil {
		s(ev)
	}
}
