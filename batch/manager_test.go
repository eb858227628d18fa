package batch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// echoDispatcher answers every call with its arguments as stdout; calls
// whose arguments contain "fail" exit 1, "slow" ones wait for ctx.
type echoDispatcher struct {
	calls   atomic.Int64
	mu      sync.Mutex
	lanes   map[core.Lane]int
	running atomic.Int64
	peak    atomic.Int64
}

func (d *echoDispatcher) Run(ctx context.Context, c dispatcher.Call) dispatcher.Result {
	d.calls.Add(1)
	d.mu.Lock()
	if d.lanes == nil {
		d.lanes = map[core.Lane]int{}
	}
	d.lanes[c.Lane]++
	d.mu.Unlock()
	n := d.running.Add(1)
	defer d.running.Add(-1)
	for {
		p := d.peak.Load()
		if n <= p || d.peak.CompareAndSwap(p, n) {
			break
		}
	}
	args := string(c.Arguments)
	if strings.Contains(args, "slow") {
		select {
		case <-ctx.Done():
			return dispatcher.Result{Status: dispatcher.StatusInternal, Err: ctx.Err()}
		case <-time.After(testscale.D(5 * time.Second)):
		}
	}
	time.Sleep(2 * time.Millisecond)
	exit, st := 0, dispatcher.StatusOK
	if strings.Contains(args, "fail") {
		exit, st = 1, dispatcher.StatusError
	}
	return dispatcher.Result{Status: st, Sandbox: &core.Result{ExitCode: exit, Stdout: args + "\n", DurationMS: 2}}
}

func items(n int, args func(i int) string) []Item {
	out := make([]Item, n)
	for i := range out {
		out[i] = Item{CustomID: fmt.Sprintf("item-%d", i), Call: &dispatcher.Call{Name: "python", Arguments: json.RawMessage(args(i))}}
	}
	return out
}

func waitStatus(t *testing.T, m *Manager, owner, id string, want ...wire.BatchStatus) Batch {
	t.Helper()
	deadline := time.Now().Add(testscale.D(20 * time.Second))
	for time.Now().Before(deadline) {
		b, err := m.Get(context.Background(), owner, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if b.Status == w {
				return b
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := m.Get(context.Background(), owner, id)
	t.Fatalf("batch %s is %s, want %v", id, b.Status, want)
	return b
}

func TestBatchRunsEveryItemOnceInBatchLane(t *testing.T) {
	st := state.NewMemory(time.Now)
	d := &echoDispatcher{}
	m, err := New(Config{LeaseTTL: time.Second, OwnerConcurrency: 3}, st, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b, err := m.Create(ctx, "alice", Spec{Items: items(50, func(i int) string {
		if i%10 == 3 {
			return fmt.Sprintf(`{"code":"fail %d"}`, i)
		}
		return fmt.Sprintf(`{"code":"%d"}`, i)
	}), Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	if b.Object != "batch" || b.RequestCounts.Total != 50 {
		t.Fatalf("batch %+v", b)
	}
	b = waitStatus(t, m, "alice", b.ID, wire.BatchCompleted)
	if b.RequestCounts != (wire.BatchCounts{Total: 50, Completed: 45, Failed: 5}) {
		t.Fatalf("counts %+v", b.RequestCounts)
	}
	lines, err := m.Results(ctx, "alice", b.ID)
	if err != nil || len(lines) != 50 {
		t.Fatalf("lines %d %v", len(lines), err)
	}
	if d.calls.Load() != 50 || d.lanes[core.LaneBatch] != 50 {
		t.Fatalf("calls %d lanes %v", d.calls.Load(), d.lanes)
	}
	if d.peak.Load() > 3 {
		t.Fatalf("owner cap 3 exceeded: peak %d", d.peak.Load())
	}
	// Retry reruns the failed five only.
	if _, err := m.Retry(ctx, "alice", b.ID); err != nil {
		t.Fatal(err)
	}
	b = waitStatus(t, m, "alice", b.ID, wire.BatchCompleted)
	if d.calls.Load() != 55 {
		t.Fatalf("retry ran %d calls, want 5", d.calls.Load()-50)
	}
	lines, _ = m.Results(ctx, "alice", b.ID)
	if len(lines) != 50 {
		t.Fatalf("after retry %d lines", len(lines))
	}
	if _, err := m.Get(ctx, "bob", b.ID); core.CodeOf(err) != core.ErrNotFound {
		t.Fatalf("other owner: %v", err)
	}
}

func TestBatchCancelStopsQueuedItems(t *testing.T) {
	st := state.NewMemory(time.Now)
	d := &echoDispatcher{}
	m, _ := New(Config{LeaseTTL: time.Second}, st, d, nil)
	ctx := context.Background()
	b, err := m.Create(ctx, "alice", Spec{Items: items(40, func(i int) string { return `{"code":"slow"}` }), Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := m.Cancel(ctx, "alice", b.ID); err != nil {
		t.Fatal(err)
	}
	b = waitStatus(t, m, "alice", b.ID, wire.BatchCancelled)
	if d.calls.Load() > 4 {
		t.Fatalf("%d calls ran after cancel", d.calls.Load())
	}
	lines, _ := m.Results(ctx, "alice", b.ID)
	if len(lines) != 40 {
		t.Fatalf("%d lines", len(lines))
	}
}

func TestBatchResumesAfterLeaseExpiry(t *testing.T) {
	st := state.NewMemory(time.Now)
	d := &echoDispatcher{}
	ctx := context.Background()
	// Replica A writes the batch but dies before running it: its lease is
	// taken and never renewed.
	a, _ := New(Config{Replica: "a", LeaseTTL: 300 * time.Millisecond}, st, d, nil)
	spec := Spec{Items: items(30, func(i int) string { return fmt.Sprintf(`{"code":"%d"}`, i) })}
	b := Batch{Owner: "alice", Batch: wire.Batch{ID: "batch_x", Object: "batch", Status: wire.BatchInProgress, RequestCounts: wire.BatchCounts{Total: 30},
		ExpiresAt: time.Now().Add(time.Hour).Unix(), Concurrency: 4}, Lease: &Lease{Holder: "a", Until: time.Now().Add(300 * time.Millisecond)}}
	for i := range spec.Items {
		it := spec.Items[i]
		it.Index, it.Status, it.Attempt = i, ItemPending, 1
		if i < 10 { // done by A, with only some lines logged
			it.Status = ItemCompleted
			it.Result = &wire.BatchLine{CustomID: it.CustomID, Status: "ok", Attempt: 1}
			if i < 5 {
				if err := a.appendLine(ctx, "alice", b.ID, it.Result, 30); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := a.putItem(ctx, "alice", b.ID, &it, -1); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.putBatch(ctx, b, -1); err != nil {
		t.Fatal(err)
	}
	_, _ = st.Put(ctx, state.Key{Kind: kindIndex, ID: b.ID}, []byte("alice"), state.PutOptions{})
	bm, _ := New(Config{Replica: "b", LeaseTTL: 300 * time.Millisecond, ScanEvery: 50 * time.Millisecond}, st, d, nil)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go bm.Run(rctx)
	got := waitStatus(t, bm, "alice", b.ID, wire.BatchCompleted)
	if got.RequestCounts.Completed != 30 || d.calls.Load() != 20 {
		t.Fatalf("counts %+v calls %d", got.RequestCounts, d.calls.Load())
	}
	raw := 0
	_ = bm.rangeLog(ctx, "alice", b.ID, func(wire.BatchLine) { raw++ })
	if raw != 30 {
		t.Fatalf("log has %d lines, want exactly 30", raw)
	}
	// A's ten finished items had no item events: B adds them once.
	evs, err := bm.loggedItemEvents(ctx, "alice", b.ID)
	if err != nil || len(evs) != 30 {
		t.Fatalf("item events for %d items (%v), want 30", len(evs), err)
	}
}

func TestParseJSONLErrorsNameTheLine(t *testing.T) {
	cases := map[string]string{
		"{\"custom_id\":\"a\",\"tool_call\":{}}\n{\"custom_id\":\"a\",\"tool_call\":{}}": "line 2: duplicate custom_id",
		"{\"custom_id\":\"a\",\"tool_call\":{}}\nnot json":                               "line 2: not a valid item",
		"{\"tool_call\":{}}": "line 1: \"custom_id\" is required",
		`{"custom_id":"a","method":"GET","url":"/v1/tool-calls","body":{}}`: `line 1: "method" must be "POST"`,
	}
	for in, want := range cases {
		_, err := ParseJSONL(strings.NewReader(in), 0)
		if err == nil || !strings.Contains(err.Error(), want) || core.CodeOf(err) != core.ErrInvalid {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	its, err := ParseJSONL(strings.NewReader(`{"custom_id":"x","method":"POST","url":"/v1/tool-calls","body":{"function":{"name":"python"}}}`+"\n"), 0)
	if err != nil || len(its) != 1 || len(its[0].ToolCall) == 0 {
		t.Fatalf("%v %v", its, err)
	}
}
