package batch

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// TestEachResultStreamsLatestAttempts: EachResult hands over the lines
// Results answers (the latest attempt of each item, in order of
// completion) across several store pages, stops at fn's error, and
// refuses an unknown batch before any line.
func TestEachResultStreamsLatestAttempts(t *testing.T) {
	st := state.NewMemory(time.Now)
	m, _ := New(Config{}, st, &peakDispatcher{}, nil)
	ctx := context.Background()
	b := Batch{Owner: "alice", Batch: wire.Batch{ID: "batch_x", Object: "batch", Status: wire.BatchCompleted}}
	if err := m.putBatch(ctx, b, -1); err != nil {
		t.Fatal(err)
	}
	// 3*streamPage items, every third one retried after all first attempts.
	n := 3 * streamPage
	for i := 0; i < n; i++ {
		if err := m.appendLine(ctx, "alice", b.ID, &wire.BatchLine{CustomID: fmt.Sprint(i), Status: "ok", Attempt: 1}, n); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i += 3 {
		if err := m.appendLine(ctx, "alice", b.ID, &wire.BatchLine{CustomID: fmt.Sprint(i), Status: "ok", Attempt: 2}, n); err != nil {
			t.Fatal(err)
		}
	}
	want, err := m.Results(ctx, "alice", b.ID)
	if err != nil || len(want) != n {
		t.Fatalf("Results: %d lines, %v", len(want), err)
	}
	var got []wire.BatchLine
	if err := m.EachResult(ctx, "alice", b.ID, func(l *wire.BatchLine) error { got = append(got, *l); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("EachResult gave %d lines, Results %d", len(got), len(want))
	}
	for i := range want {
		if got[i].CustomID != want[i].CustomID || got[i].Attempt != want[i].Attempt {
			t.Fatalf("line %d: EachResult %s/%d, Results %s/%d", i, got[i].CustomID, got[i].Attempt, want[i].CustomID, want[i].Attempt)
		}
	}
	if got[0].CustomID != "1" || got[len(got)-1].CustomID != fmt.Sprint(n-3) || got[len(got)-1].Attempt != 2 {
		t.Fatalf("order: first %+v, last %+v", got[0], got[len(got)-1])
	}

	stop := errors.New("client gone")
	calls := 0
	if err := m.EachResult(ctx, "alice", b.ID, func(*wire.BatchLine) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("fn's error: %v after %d calls, want it after 1", err, calls)
	}
	if err := m.EachResult(ctx, "alice", "batch_none", func(*wire.BatchLine) error { t.Fatal("a line of no batch"); return nil }); core.CodeOf(err) != core.ErrNotFound {
		t.Fatalf("unknown batch: %v", err)
	}
}
