package batch

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// TestItemEventsAndCPUSeconds: the events log holds one item event per
// finished item (custom_id, status, duration) among the progress
// snapshots, with dense Seq numbers, and Events resumes after a Seq; the
// summary sums measured CPU seconds, or says it estimated them.
func TestItemEventsAndCPUSeconds(t *testing.T) {
	for _, cpu := range []float64{0.25, 0} {
		st := state.NewMemory(time.Now)
		d := &recordingDispatcher{cpu: cpu}
		m, _ := New(Config{LeaseTTL: time.Second}, st, d, nil)
		ctx := context.Background()
		b, err := m.Create(ctx, "alice", Spec{Items: items(8, func(int) string { return `{}` }), Concurrency: 3})
		if err != nil {
			t.Fatal(err)
		}
		b = waitStatus(t, m, "alice", b.ID, wire.BatchCompleted)
		// The final snapshot is logged just after the record changes.
		var es []state.Entry
		for deadline := time.Now().Add(testscale.D(10 * time.Second)); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if es, err = m.Events(ctx, "alice", b.ID, 0, 0); err != nil {
				t.Fatal(err)
			}
			var tail Batch
			if len(es) > 0 && json.Unmarshal(es[len(es)-1].Data, &tail) == nil && tail.Status == wire.BatchCompleted {
				break
			}
		}
		perItem := map[string]int{}
		var last Batch
		for i, e := range es {
			if e.Seq != int64(i+1) {
				t.Fatalf("event %d has Seq %d: not dense", i, e.Seq)
			}
			var probe struct {
				Object string `json:"object"`
			}
			_ = json.Unmarshal(e.Data, &probe)
			switch probe.Object {
			case wire.BatchItemEventObject:
				var ev wire.BatchItemEvent
				_ = json.Unmarshal(e.Data, &ev)
				if ev.Status != "ok" || ev.Failed || ev.Attempt != 1 {
					t.Errorf("item event %s", e.Data)
				}
				perItem[ev.CustomID]++
			case "batch":
				_ = json.Unmarshal(e.Data, &last)
			default:
				t.Errorf("unknown event %s", e.Data)
			}
		}
		if len(perItem) != 8 {
			t.Fatalf("item events for %d items, want 8: %v", len(perItem), perItem)
		}
		for id, n := range perItem {
			if n != 1 {
				t.Errorf("%s has %d item events", id, n)
			}
		}
		if last.Status != wire.BatchCompleted || es[len(es)-1].Seq != int64(len(es)) {
			t.Errorf("last progress snapshot %s", last.Status)
		}
		resumed, _ := m.Events(ctx, "alice", b.ID, 3, 0)
		if len(resumed) != len(es)-3 || resumed[0].Seq != 4 {
			t.Errorf("resume after 3: %d events from %d", len(resumed), resumed[0].Seq)
		}

		lines, _ := m.Results(ctx, "alice", b.ID)
		s := Summarize(b, lines)
		if cpu > 0 {
			if s.CPUSeconds != 8*cpu || s.CPUSecondsEstimated || s.CPUMeasuredItems != 8 {
				t.Errorf("measured: %+v", s)
			}
		} else if !s.CPUSecondsEstimated || s.CPUMeasuredItems != 0 {
			t.Errorf("unmeasured: %+v", s)
		}
	}
}
