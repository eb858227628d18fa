package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// recordingDispatcher keeps every call; fail makes the first calls of a
// custom id answer unavailable (a platform outage), cpu sets CPUSeconds.
type recordingDispatcher struct {
	mu    sync.Mutex
	calls []dispatcher.Call
	fail  map[string]int
	cpu   float64
}

func (d *recordingDispatcher) Run(_ context.Context, c dispatcher.Call) dispatcher.Result {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, c)
	_, tail, _ := strings.Cut(c.IdempotencyKey, "/") // batch/custom_id/attempt
	if d.fail[tail] > 0 {
		d.fail[tail]--
		return dispatcher.Result{Status: dispatcher.StatusUnavailable, Content: "redis is down", Err: core.E("test", core.ErrUnavailable, errors.New("redis is down"))}
	}
	return dispatcher.Result{Status: dispatcher.StatusOK, Sandbox: &core.Result{Stdout: fmt.Sprintf("%d\n", len(c.Archive)), CPUSeconds: d.cpu}}
}

func (d *recordingDispatcher) byKey() map[string][]dispatcher.Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string][]dispatcher.Call{}
	for _, c := range d.calls {
		out[c.IdempotencyKey] = append(out[c.IdempotencyKey], c)
	}
	return out
}

func mapItem(id, dir string) Item {
	return Item{CustomID: id, Call: &dispatcher.Call{Name: "python", Arguments: json.RawMessage(`{}`), Mount: dir, MountName: "src/" + id}}
}

func lineOf(t *testing.T, lines []wire.BatchLine, id string) wire.BatchLine {
	t.Helper()
	for _, l := range lines {
		if l.CustomID == id {
			return l
		}
	}
	t.Fatalf("no line for %s in %+v", id, lines)
	return wire.BatchLine{}
}

// TestFolderItemsArePackedOrMounted: by default a folder item travels as
// a tar of its folder (no Mount), and one that cannot be packed is mounted
// with its line saying why; with MountInputs every folder is mounted.
func TestFolderItemsArePackedOrMounted(t *testing.T) {
	small := writeTree(t, map[string]string{"a.py": "print(1)\n"})
	tooMany := writeTree(t, map[string]string{"1": "", "2": "", "3": ""})
	for _, mount := range []bool{false, true} {
		d := &recordingDispatcher{}
		m, _ := New(Config{LeaseTTL: time.Second, MountInputs: mount, PackMaxEntries: 2}, state.NewMemory(time.Now), d, nil)
		ctx := context.Background()
		b, err := m.Create(ctx, "alice", Spec{Items: []Item{mapItem("small", small), mapItem("many", tooMany)}})
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, m, "alice", b.ID, wire.BatchCompleted)
		lines, _ := m.Results(ctx, "alice", b.ID)
		calls := d.byKey()
		s, many := calls[b.ID+"/small/1"][0], calls[b.ID+"/many/1"][0]
		ls, lm := lineOf(t, lines, "small"), lineOf(t, lines, "many")
		if lm.InputMode != InputMount || many.Mount != tooMany || many.Archive != nil {
			t.Errorf("mount=%v: the folder over the entry bound was not mounted: %+v, call mount %q archive %d", mount, lm, many.Mount, len(many.Archive))
		}
		if !mount && !strings.Contains(lm.InputNote, "over 2 entries; copied from the folder into the sandbox by the worker instead") {
			t.Errorf("fallback note %q", lm.InputNote)
		}
		if mount {
			if s.Mount != small || s.Archive != nil || ls.InputMode != InputMount || ls.InputNote != "" {
				t.Errorf("MountInputs: small item call mount %q archive %d line %+v", s.Mount, len(s.Archive), ls)
			}
			continue
		}
		if s.Mount != "" || ls.InputMode != InputArchive {
			t.Fatalf("small item not packed: mount %q line %+v", s.Mount, ls)
		}
		if got := untarAll(t, s.Archive); got["a.py"] != "print(1)\n" || len(got) != 1 {
			t.Errorf("packed %v", got)
		}
	}
}

// TestUploadedArchivesLiveInTheStore: uploaded archives are stored under
// the batch in chunks with a TTL (completion window + retention), sent
// byte for byte as each item's Archive, refreshed on retry, refused over
// core.MaxArchiveBytes, and an expired one fails its item clearly.
func TestUploadedArchivesLiveInTheStore(t *testing.T) {
	st := state.NewMemory(time.Now)
	d := &recordingDispatcher{}
	m, _ := New(Config{LeaseTTL: time.Second, ArchiveRetention: time.Hour}, st, d, nil)
	ctx := context.Background()
	big := bytes.Repeat([]byte("0123456789abcdef"), (archiveChunk+1000)/16) // two chunks
	small := []byte("a small archive")
	call := func() *dispatcher.Call { return &dispatcher.Call{Name: "python", Arguments: json.RawMessage(`{}`)} }
	spec := Spec{CompletionWindow: time.Hour, Archives: [][]byte{big, small},
		Items: []Item{{CustomID: "archive-0", Call: call(), Archive: 1}, {CustomID: "archive-1", Call: call(), Archive: 2}}}
	b, err := m.Create(ctx, "alice", spec)
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, m, "alice", b.ID, wire.BatchCompleted)
	calls := d.byKey()
	if c := calls[b.ID+"/archive-0/1"][0]; !bytes.Equal(c.Archive, big) || c.Mount != "" {
		t.Fatalf("archive 1 sent as %d bytes (mount %q), want the %d uploaded", len(c.Archive), c.Mount, len(big))
	}
	if c := calls[b.ID+"/archive-1/1"][0]; !bytes.Equal(c.Archive, small) {
		t.Fatalf("archive 2 sent as %q", c.Archive)
	}
	recs, _ := st.List(ctx, kindArc, "alice", "", 100)
	if len(recs) != 5 { // meta + 2 chunks, meta + 1 chunk
		t.Fatalf("%d archive records, want 5", len(recs))
	}
	for _, r := range recs {
		if left := time.Until(r.Expires); left < 110*time.Minute || left > 2*time.Hour {
			t.Errorf("%s expires in %s, want the window + retention (2h)", r.Key.ID, left)
		}
	}
	lines, _ := m.Results(ctx, "alice", b.ID)
	if l := lineOf(t, lines, "archive-1"); l.InputMode != InputArchive {
		t.Errorf("line %+v", l)
	}

	if _, err := m.Create(ctx, "alice", Spec{Archives: [][]byte{make([]byte, core.MaxArchiveBytes+1)}, Items: []Item{{CustomID: "x", Call: call(), Archive: 1}}}); core.CodeOf(err) != core.ErrTooLarge || !strings.Contains(err.Error(), "16777216") {
		t.Errorf("oversized archive: %v", err)
	}
	before, _ := st.List(ctx, kindItem, "alice", "", 1000)
	if _, err := m.Create(ctx, "alice", Spec{Items: []Item{{CustomID: "ok", Call: call()}, {CustomID: "x", Call: call(), Archive: 3}}}); core.CodeOf(err) != core.ErrInvalid {
		t.Errorf("item naming a missing archive: %v", err)
	}
	if after, _ := st.List(ctx, kindItem, "alice", "", 1000); len(after) != len(before) {
		t.Errorf("a refused batch left %d item records behind", len(after)-len(before))
	}

	// An archive gone from the store fails its item, naming it.
	b2, err := m.Create(ctx, "alice", Spec{Archives: [][]byte{small}, Items: []Item{{CustomID: "gone", Call: call(), Archive: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, m, "alice", b2.ID, wire.BatchCompleted)
	_ = st.Delete(ctx, archiveKey("alice", b2.ID, 1), 0)
	failFirstItem(t, m, "alice", b2.ID)
	if _, err := m.Retry(ctx, "alice", b2.ID); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, m, "alice", b2.ID, wire.BatchCompleted)
	lines, _ = m.Results(ctx, "alice", b2.ID)
	if l := lineOf(t, lines, "gone"); l.Status != "failed" || l.Error == nil || l.Error.Code != "archive_gone" || l.Attempt != 2 {
		t.Errorf("item of an expired archive: %+v", l)
	}
}

// TestTransientFailuresAreRetried: an item whose call meets an outage
// (unavailable) is run again with the same idempotency key and records one
// ok line, not a failure.
func TestTransientFailuresAreRetried(t *testing.T) {
	st := state.NewMemory(time.Now)
	d := &recordingDispatcher{fail: map[string]int{"item-1/1": 2}}
	m, _ := New(Config{LeaseTTL: time.Second}, st, d, nil)
	ctx := context.Background()
	b, err := m.Create(ctx, "alice", Spec{Items: items(3, func(int) string { return `{}` })})
	if err != nil {
		t.Fatal(err)
	}
	b = waitStatus(t, m, "alice", b.ID, wire.BatchCompleted)
	if b.RequestCounts != (wire.BatchCounts{Total: 3, Completed: 3}) {
		t.Fatalf("counts %+v", b.RequestCounts)
	}
	if n := len(d.byKey()[b.ID+"/item-1/1"]); n != 3 {
		t.Errorf("item-1 dispatched %d times, want 3 (2 outages, then ok)", n)
	}
	raw := 0
	_ = m.rangeLog(ctx, "alice", b.ID, func(wire.BatchLine) { raw++ })
	if raw != 3 {
		t.Errorf("%d lines logged, want 3", raw)
	}
}

// TestRetryExtendsArchiveTTL: a batch retried after its completion window
// (within the retention) re-stores its archives for the retry's own window
// plus the retention, not for what was left of the first ones.
func TestRetryExtendsArchiveTTL(t *testing.T) {
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	st := state.NewMemory(now)
	m, _ := New(Config{LeaseTTL: time.Second, ArchiveRetention: time.Hour, Now: now}, st, &recordingDispatcher{}, nil)
	ctx := context.Background()
	call := &dispatcher.Call{Name: "python", Arguments: json.RawMessage(`{}`)}
	b, err := m.Create(ctx, "alice", Spec{CompletionWindow: time.Hour, Archives: [][]byte{[]byte("an archive")},
		Items: []Item{{CustomID: "a", Call: call, Archive: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, m, "alice", b.ID, wire.BatchCompleted)
	offset.Store(int64(90 * time.Minute)) // past the window, 30 min of retention left
	failFirstItem(t, m, "alice", b.ID)
	if _, err := m.Retry(ctx, "alice", b.ID); err != nil {
		t.Fatal(err)
	}
	recs, _ := st.List(ctx, kindArc, "alice", "", 100)
	if len(recs) != 2 {
		t.Fatalf("%d archive records, want 2", len(recs))
	}
	for _, r := range recs {
		if left := r.Expires.Sub(now()); left < 110*time.Minute {
			t.Errorf("after the retry %s expires in %s, want the retry's window + retention (2h)", r.Key.ID, left.Round(time.Minute))
		}
	}
	waitStatus(t, m, "alice", b.ID, wire.BatchCompleted)
}
