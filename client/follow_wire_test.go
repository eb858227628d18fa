package client_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/airlock-dev/airlock/wire"
)

// TestFollowRunFinalBeforeRunFinished: the server makes a run's record
// final just before it appends run_finished, so a stream that times out
// between the two finds the run final while its last event is still to
// come. FollowRun must read that event, not stop without it (CI saw
// FollowRun end after final_answer, without run_finished).
func TestFollowRunFinalBeforeRunFinished(t *testing.T) {
	ctx := testCtx(t)
	event := func(seq int, typ wire.EventType) string {
		return fmt.Sprintf("id: %d\ndata: {\"seq\":%d,\"type\":%q,\"data\":{}}\n\n", seq, seq, typ)
	}
	var streams atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/runs/r1":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"r1","status":"done"}`)
		case "/v1/runs/r1/events":
			w.Header().Set("Content-Type", "text/event-stream")
			switch streams.Add(1) {
			case 1: // times out after final_answer
				_, _ = io.WriteString(w, event(1, wire.EventStepStarted)+event(2, wire.EventFinalAnswer))
			default:
				if got := r.Header.Get("Last-Event-ID"); got != "2" {
					t.Errorf("resumed after %q, want 2", got)
				}
				_, _ = io.WriteString(w, event(3, wire.EventRunFinished))
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(hs.Close)
	var evs []wire.RunEvent
	err := newClient(t, hs.URL, "k").FollowRun(ctx, "r1", 0, func(ev wire.RunEvent) error { evs = append(evs, ev); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || evs[2].Type != wire.EventRunFinished {
		t.Fatalf("events %v, want run_finished last", types(evs))
	}

	// A final run whose log has no run_finished (trimmed) still ends.
	streams.Store(0)
	hs2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/runs/r1" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"r1","status":"failed"}`)
			return
		}
		streams.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
	}))
	t.Cleanup(hs2.Close)
	if err := newClient(t, hs2.URL, "k").FollowRun(ctx, "r1", 0, func(wire.RunEvent) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if n := streams.Load(); n != 2 {
		t.Fatalf("%d streams for a final run without run_finished, want 2", n)
	}
}
