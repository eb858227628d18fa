package client_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/airlock-dev/airlock/client"
	"github.com/airlock-dev/airlock/core"
)

// wireServer answers every request with status, content type and body:
// for the framing cases the real server does not produce on demand.
func wireServer(t *testing.T, status int, contentType, body string) *client.Client {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "text/event-stream" {
			t.Errorf("Accept %q, want text/event-stream", r.Header.Get("Accept"))
		}
		w.Header().Set("Content-Type", contentType)
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "3")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(hs.Close)
	return newClient(t, hs.URL, "k")
}

func TestCallStreamWire(t *testing.T) {
	ctx := testCtx(t)
	call := client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": "1"}}
	result := `{"message":{"role":"tool","tool_call_id":"c1","content":"ok"},"result":{"tool_call_id":"c1","name":"run_python","status":"ok","stdout":"a\nb\n","stderr":"","truncated":false,"artifacts":[],"duration_ms":3}}`

	t.Run("events, unknown ones skipped, CRLF framing", func(t *testing.T) {
		body := ": call c1\r\n\r\nevent: stdout\r\ndata: {\"kind\":\"stdout\",\"text\":\"a\\n\"}\r\n\r\n" +
			"event: progress\ndata: {}\n\n: ping\n\n" +
			"event: artifact\ndata: {\"kind\":\"artifact\",\"artifact\":{\"name\":\"p.png\",\"mime\":\"image/png\",\"size\":4,\"sha256\":\"ab\"}}\n\n" +
			"event: result\ndata: " + result + "\n\n"
		s, err := wireServer(t, 200, "text/event-stream", body).CallToolStream(ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		got := readStream(t, s)
		if len(got.events) != 2 || got.events[0].Text != "a\n" || got.events[1].Kind != core.EventArtifact ||
			got.events[1].Artifact == nil || got.events[1].Artifact.Name != "p.png" {
			t.Fatalf("events %+v", got.events)
		}
		if got.res.Result.Stdout != "a\nb\n" || got.res.Message.ToolCallID != "c1" {
			t.Fatalf("result %+v", got.res)
		}
	})
	t.Run("error event", func(t *testing.T) {
		body := "event: error\ndata: {\"status\":503,\"error\":{\"code\":\"unavailable\",\"message\":\"no workers\",\"details\":{\"x\":1}}}\n\n"
		s, err := wireServer(t, 200, "text/event-stream", body).CallSessionToolStream(ctx, "s1", call)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		_, err = s.Next()
		ae := apiError(t, err, http.StatusServiceUnavailable, core.ErrUnavailable)
		if ae.Path != "/v1/sessions/s1/tool-calls" || ae.Details["x"] != float64(1) || !ae.Temporary() {
			t.Fatalf("%+v", ae)
		}
		if res, err := s.Result(); res != nil || !errors.Is(err, ae) {
			t.Fatalf("Result after the error: %+v %v", res, err)
		}
	})
	t.Run("stream ends before the result", func(t *testing.T) {
		body := "event: stdout\ndata: {\"kind\":\"stdout\",\"text\":\"a\"}\n\nevent: result\ndata: {\"mess"
		s, err := wireServer(t, 200, "text/event-stream", body).CallToolStream(ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if ev, err := s.Next(); err != nil || ev.Text != "a" {
			t.Fatalf("first event %+v %v", ev, err)
		}
		if _, err := s.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("truncated stream: %v, want io.ErrUnexpectedEOF", err)
		}
	})
	t.Run("a JSON answer instead of a stream", func(t *testing.T) {
		s, err := wireServer(t, 200, "application/json; charset=utf-8", result).CallToolStream(ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		got := readStream(t, s)
		if len(got.events) != 0 || got.res.Result.Stdout != "a\nb\n" {
			t.Fatalf("%+v", got)
		}
	})
	t.Run("refused before the stream", func(t *testing.T) {
		body := `{"error":{"code":"busy","message":"too many calls"}}`
		_, err := wireServer(t, http.StatusTooManyRequests, "application/json", body).CallToolStream(ctx, call)
		if ae := apiError(t, err, http.StatusTooManyRequests, core.ErrBusy); ae.RetryAfter.Seconds() != 3 {
			t.Fatalf("Retry-After %v", ae.RetryAfter)
		}
	})
}
