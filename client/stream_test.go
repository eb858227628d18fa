package client_test

import (
	"errors"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/client"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/wire"
)

// streamed is what a test read from a CallStream: the events with the
// time each arrived, and the result with its time.
type streamed struct {
	events []wire.CallEvent
	at     []time.Time
	res    *wire.ToolCallResponse
	resAt  time.Time
}

// readStream reads s to its end; it fails t on any error.
func readStream(t *testing.T, s *client.CallStream) streamed {
	t.Helper()
	defer s.Close()
	var out streamed
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Next after %d events: %v", len(out.events), err)
		}
		out.events, out.at = append(out.events, ev), append(out.at, time.Now())
	}
	res, err := s.Result()
	if err != nil || res == nil {
		t.Fatalf("Result: %+v %v", res, err)
	}
	out.res, out.resAt = res, time.Now()
	return out
}

// msDuration is the call's duration in a tool message.
var msDuration = regexp.MustCompile(`[0-9]+ ms`)

// comparable zeroes the fields of r that differ from one run to the next.
func comparable(r wire.ToolCallResponse) wire.ToolCallResponse {
	r.Result.DurationMS = 0
	r.Message.Content = msDuration.ReplaceAllString(r.Message.Content, "N ms")
	return r
}

func TestCallToolStream(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t, airlockURL, keyAlice)
	code := "import time\nfor i in range(3): print(i); time.sleep(0.5)"
	call := client.ToolCall{ID: "call_stream1", Name: "run_python", Arguments: map[string]any{"code": code}}
	s, err := c.CallToolStream(ctx, call)
	if err != nil {
		t.Fatal(err)
	}
	got := readStream(t, s)
	var text strings.Builder
	for i, ev := range got.events {
		if ev.Kind != core.EventStdout {
			t.Fatalf("event %d: %+v, want only stdout", i, ev)
		}
		text.WriteString(ev.Text)
	}
	if text.String() != "0\n1\n2\n" || len(got.events) < 2 {
		t.Fatalf("stdout events %+v, want 0 1 2 in at least two pieces", got.events)
	}
	// The first line came while the code still slept: well before the end.
	if lead := got.resAt.Sub(got.at[0]); lead < 700*time.Millisecond {
		t.Fatalf("first stdout event only %v before the result: not streamed", lead)
	}
	if got.res.Result.Status != core.StatusOK || got.res.Result.Stdout != "0\n1\n2\n" || got.res.Message.ToolCallID != "call_stream1" {
		t.Fatalf("result %+v", got.res)
	}
	plain, err := c.CallTool(ctx, call)
	mustOK(t, plain, err)
	if a, b := comparable(*got.res), comparable(*plain); !reflect.DeepEqual(a, b) {
		t.Fatalf("streamed result differs from the JSON answer:\nstream %+v\njson   %+v", a, b)
	}
}

func TestCallSessionToolStream(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t, airlockURL, keyAlice)
	sess, err := c.CreateSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteSession(ctx, sess.ID) })
	code := "import sys\nprint('out')\nprint('err', file=sys.stderr)\nx = 41\nx + 1"
	s, err := c.CallSessionToolStream(ctx, sess.ID, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": code}})
	if err != nil {
		t.Fatal(err)
	}
	got := readStream(t, s)
	kinds := map[string]string{}
	for _, ev := range got.events {
		switch ev.Kind {
		case core.EventStdout, core.EventStderr:
			kinds[ev.Kind] += ev.Text
		case core.EventDisplay:
			kinds[ev.Kind] += ev.Data["text/plain"]
		}
	}
	r := got.res.Result
	want := map[string]string{core.EventStdout: r.Stdout, core.EventStderr: "err\n", core.EventDisplay: "42"}
	if !reflect.DeepEqual(kinds, want) || !strings.HasPrefix(r.Stdout, "out\n") || r.Stderr != "err\n" {
		t.Fatalf("events %+v, want %v", got.events, want)
	}
	if r.Status != core.StatusOK || r.SessionID != sess.ID || r.ExecutionCount != 1 ||
		len(r.Display) != 1 || r.Display[0].Data["text/plain"] != "42" {
		t.Fatalf("result %+v", r)
	}
	// An exception is a result with the error's name, value and traceback.
	s, err = c.CallSessionToolStream(ctx, sess.ID, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": "1/0"}})
	if err != nil {
		t.Fatal(err)
	}
	r = readStream(t, s).res.Result
	if r.Status != core.StatusError || r.Error == nil || r.Error.Name != "ZeroDivisionError" ||
		len(r.Error.Traceback) == 0 || r.ExecutionCount != 2 {
		t.Fatalf("error result %+v (error %+v)", r, r.Error)
	}
	// A refused request is an *APIError before any event.
	bob := newClient(t, airlockURL, keyBob)
	_, err = bob.CallSessionToolStream(ctx, sess.ID, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": "1"}})
	apiError(t, err, http.StatusNotFound, core.ErrNotFound)
	// A call of a tool that does not exist is a result, as without streaming.
	s, err = c.CallToolStream(ctx, client.ToolCall{Name: "no_such_tool", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if r := readStream(t, s).res.Result; r.Status != core.StatusRejected {
		t.Fatalf("unknown tool: %+v", r)
	}
}

func TestCallStreamErrorEvent(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t, airlockURL, keyAlice)
	sess, err := c.CreateSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.CallSessionToolStream(ctx, sess.ID, client.ToolCall{Name: "run_python",
		Arguments: map[string]any{"code": "import time\nprint('started', flush=True)\ntime.sleep(30)"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ev, err := s.Next(); err != nil || ev.Text != "started\n" {
		t.Fatalf("first event %+v %v", ev, err)
	}
	// The session closes under the running call: the stream ends with an
	// "error" event, an *APIError from Next and Result.
	if err := c.DeleteSession(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	res, err := s.Result()
	var ae *client.APIError
	if !errors.As(err, &ae) || res != nil || ae.StatusCode < 400 || ae.Code == "" || ae.Method != http.MethodPost ||
		ae.Path != "/v1/sessions/"+sess.ID+"/tool-calls" {
		t.Fatalf("result %+v, error %v (%+v)", res, err, ae)
	}
	if _, err := s.Next(); !errors.Is(err, ae) {
		t.Fatalf("Next after the error event: %v, want the same error", err)
	}
	t.Logf("error event: %v", ae)

}
