package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// requireKernel asserts the sandbox knows the kernel's session
// operations: interrupting an idle session answers 200, interrupted false.
func requireKernel(t *testing.T, base, sid string) {
	t.Helper()
	r := do(t, "POST", base+"/v1/sessions/"+sid+"/interrupt", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("interrupt of an idle session: HTTP %d %.200s", r.Status, r.Body)
	}
	if v, _ := r.JSON(t)["interrupted"].(bool); v {
		t.Fatalf("interrupt of an idle session reported a running call: %s", r.Body)
	}
}

// streamEvent is one SSE event of a streamed tool call, with when it came.
type streamEvent struct {
	Name string
	Data string
	At   time.Duration // since the request was sent
}

// streamCall posts a tool call with Accept: text/event-stream and returns
// its events, up to and including result or error.
func streamCall(t *testing.T, ctx context.Context, url string, body any) ([]streamEvent, error) {
	t.Helper()
	req, err := request(ctx, "POST", url, body, "Accept", "text/event-stream")
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream answer %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	var out []streamEvent
	var cur streamEvent
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" && cur.Name != "":
			cur.At = time.Since(start)
			out = append(out, cur)
			if cur.Name == "result" || cur.Name == "error" {
				return out, nil
			}
			cur = streamEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data += strings.TrimPrefix(line, "data: ")
		}
	}
	return out, sc.Err()
}

// TestStreamingSessionCall: on the real stack, a session call printing one
// line a second shows its first line within 1.5 s, every line as its own
// event, then the result event with the same answer as a plain call.
// Needs the kernel branch's sandbox (live events).
func TestStreamingSessionCall(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	srv := startServe(t)
	sid := do(t, "POST", srv.URL+"/v1/sessions", map[string]any{}).must(t, http.StatusCreated).JSON(t)["id"].(string)
	requireKernel(t, srv.URL, sid)
	calls := srv.URL + "/v1/sessions/" + sid + "/tool-calls"
	decodeCall(t, do(t, "POST", calls, toolCall("warm", "run_python", map[string]any{"code": "import time\nprint(1)"}))).mustOK(t)

	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	evs, err := streamCall(t, ctx, calls, toolCall("c1", "run_python", map[string]any{"code": "for i in range(5): print(i); time.sleep(1)"}))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	var first time.Duration = -1
	for _, e := range evs {
		if e.Name != "stdout" {
			continue
		}
		var ev struct {
			Kind, Text string
		}
		if err := json.Unmarshal([]byte(e.Data), &ev); err != nil {
			t.Fatalf("stdout event %q: %v", e.Data, err)
		}
		if first < 0 {
			first = e.At
		}
		lines = append(lines, ev.Text)
	}
	if bound := testscale.D(1500 * time.Millisecond); first < 0 || first > bound {
		t.Fatalf("first line after %v (want ≤ %v); events %+v", first, bound, evs)
	}
	if strings.Join(lines, "") != "0\n1\n2\n3\n4\n" || len(lines) < 3 {
		t.Fatalf("streamed lines %q", lines)
	}
	last := evs[len(evs)-1]
	if last.Name != "result" {
		t.Fatalf("stream ended with %+v", last)
	}
	var out callResult
	if err := json.Unmarshal([]byte(last.Data), &out); err != nil {
		t.Fatal(err)
	}
	if out.Result.Status != "ok" || out.Result.Stdout != "0\n1\n2\n3\n4\n" || out.Message.ToolCallID != "c1" {
		t.Fatalf("result event %s", last.Data)
	}
	if last.At-first < 3*time.Second {
		t.Fatalf("the first line came only %v before the result: not live", last.At-first)
	}
}

// TestDisconnectThenInterruptKeepSession: a client that gives up on a
// long session call leaves the session alive with its state; an interrupt
// ends a running sleep quickly and keeps state too.
func TestDisconnectThenInterruptKeepSession(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	srv := startServe(t)
	base := srv.URL + "/v1/sessions/"
	sid := do(t, "POST", srv.URL+"/v1/sessions", map[string]any{}).must(t, http.StatusCreated).JSON(t)["id"].(string)
	requireKernel(t, srv.URL, sid)
	calls := base + sid + "/tool-calls"
	py := func(id, code string) map[string]any { return toolCall(id, "run_python", map[string]any{"code": code}) }
	decodeCall(t, do(t, "POST", calls, py("a", "import time\nx = 41"))).mustOK(t)

	// The client leaves after 3 s (like curl --max-time 3).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	_, err := send(ctx, "POST", calls, py("b", "time.sleep(300)"))
	cancel()
	if err == nil {
		t.Fatal("the long call answered before the client left")
	}
	do(t, "GET", base+sid, nil).must(t, http.StatusOK)
	if got := decodeCall(t, do(t, "POST", calls, py("c", "print(x + 1)"))).mustOK(t); got != "42\n" {
		t.Fatalf("after a disconnect: %q", got)
	}

	// Interrupt a sleeping call: it returns within 1 s, state survives.
	done := make(chan callResult, 1)
	go func() {
		r, err := send(context.Background(), "POST", calls, py("d", "y = 7\ntime.sleep(60)"))
		var c callResult
		if err == nil {
			_ = json.Unmarshal(r.Body, &c)
		}
		done <- c
	}()
	var hit bool
	poll(t, testscale.D(30*time.Second), "the sleeping call to be interruptible", func() bool {
		m := do(t, "POST", base+sid+"/interrupt", nil).must(t, http.StatusOK).JSON(t)
		hit, _ = m["interrupted"].(bool)
		return hit
	})
	at := time.Now()
	select {
	case c := <-done:
		if !strings.Contains(c.Result.Stderr, "KeyboardInterrupt") {
			t.Fatalf("interrupted call: %+v", c.Result)
		}
	case <-time.After(testscale.D(5 * time.Second)):
		t.Fatal("the interrupted call did not return")
	}
	if d := time.Since(at); d > testscale.D(time.Second) {
		t.Fatalf("interrupt took %v", d)
	}
	if got := decodeCall(t, do(t, "POST", calls, py("e", "print(x, y)"))).mustOK(t); got != "41 7\n" {
		t.Fatalf("after an interrupt: %q", got)
	}
	list := do(t, "GET", srv.URL+"/v1/sessions", nil).must(t, http.StatusOK).JSON(t)["sessions"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["id"] != sid {
		t.Fatalf("sessions %v", list)
	}
	// Restart: files stay, Python state goes.
	decodeCall(t, do(t, "POST", calls, py("f", "open('keep.txt', 'w').write('k')"))).mustOK(t)
	do(t, "POST", base+sid+"/restart", nil).must(t, http.StatusOK)
	if got := decodeCall(t, do(t, "POST", calls, py("g", "print(open('keep.txt').read(), 'x' in globals())"))).mustOK(t); got != "k False\n" {
		t.Fatalf("after a restart: %q", got)
	}
}
