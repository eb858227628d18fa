package api

import (
	"context"
	"encoding/json"
	"github.com/airlock-dev/airlock/internal/testscale"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/state"
)

// TestStreamedRetryReplays: a streamed call with an Idempotency-Key runs
// once; a streamed retry gets Idempotent-Replayed: true and the same final
// event (no live ones), a plain retry the same JSON body; an error answer
// replays as the same "error" event; another body under the key is 409.
func TestStreamedRetryReplays(t *testing.T) {
	h := newHarness(t, nil)
	h.disp.run = emitting
	stream := func(body any, key string) response {
		return h.do(keyAlice, "POST", "/v1/tool-calls?stream=true", body, "Idempotency-Key", key)
	}
	first := stream(py("x"), "s1").must(t, http.StatusOK)
	evs := parseCallSSE(t, first.Body)
	if len(evs) != 6 || evs[5].Event != "result" || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d events %+v", len(evs), evs)
	}
	again := stream(py("x"), "s1").must(t, http.StatusOK)
	rev := parseCallSSE(t, again.Body)
	if again.Header.Get("Idempotent-Replayed") != "true" || len(rev) != 1 || rev[0].Event != "result" || rev[0].Data != evs[5].Data {
		t.Fatalf("streamed retry: %q %+v", again.Header.Get("Idempotent-Replayed"), rev)
	}
	plain := h.do(keyAlice, "POST", "/v1/tool-calls", py("x"), "Idempotency-Key", "s1").must(t, http.StatusOK)
	if plain.Header.Get("Idempotent-Replayed") != "true" || !jsonEqual(t, plain.Body, []byte(evs[5].Data)) {
		t.Fatalf("plain retry of a streamed call: %s", plain.Body)
	}
	if n := len(h.disp.calls); n != 1 {
		t.Fatalf("%d dispatches for one key, want 1", n)
	}
	if r := stream(py("y"), "s1"); r.Code != http.StatusConflict || !strings.Contains(string(r.Body), "s1") {
		t.Fatalf("other body under the key: %d %s", r.Code, r.Body)
	}
	if r := stream(py("x"), strings.Repeat("k", 201)); r.Code != http.StatusBadRequest || !strings.Contains(string(r.Body), "Idempotency-Key is 201 bytes") {
		t.Fatalf("over-long key: %d %s", r.Code, r.Body)
	}

	h.disp.run = func(_ context.Context, call dispatcher.Call) dispatcher.Result {
		return dispatcher.Result{CallID: call.ID, Name: call.Name, Status: dispatcher.StatusSessionLost}
	}
	lost := parseCallSSE(t, stream(py("lost"), "s2").must(t, http.StatusOK).Body)
	relost := parseCallSSE(t, stream(py("lost"), "s2").must(t, http.StatusOK).Body)
	if len(lost) != 1 || lost[0].Event != "error" || len(relost) != 1 || relost[0].Event != "error" || !jsonEqual(t, []byte(lost[0].Data), []byte(relost[0].Data)) {
		t.Fatalf("error replay:\n%+v\n%+v", lost, relost)
	}
	var ev struct {
		Status int `json:"status"`
		Error  struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(relost[0].Data), &ev); err != nil || ev.Status != 409 || ev.Error.Code != "session_lost" {
		t.Fatalf("replayed error event %s", relost[0].Data)
	}
	if n := len(h.disp.calls); n != 2 {
		t.Fatalf("%d dispatches, want 2", n)
	}
}

// gatedDispatcher blocks every call until the gate it started under is
// closed, and counts them; started receives each call as it starts.
type gatedDispatcher struct {
	fakeDispatcher
	started chan dispatcher.Call
	gate    chan struct{} // under mu
}

func newGatedDispatcher() *gatedDispatcher {
	g := &gatedDispatcher{started: make(chan dispatcher.Call, 8), gate: make(chan struct{})}
	g.run = func(ctx context.Context, call dispatcher.Call) dispatcher.Result {
		g.mu.Lock()
		gate := g.gate
		g.mu.Unlock()
		g.started <- call
		<-gate
		return emitting(ctx, call)
	}
	return g
}

// open releases the calls waiting and sets a new gate for later ones.
func (g *gatedDispatcher) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.gate)
	g.gate = make(chan struct{})
}

// count is how many calls were dispatched.
func (g *gatedDispatcher) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.calls)
}

// streamAnswer is one streamed answer read to its end.
type streamAnswer struct {
	code     int
	replayed string
	events   []callSSE
	err      error
}

// postStream sends a streamed run_python call with an Idempotency-Key to
// r and reads the whole answer.
func postStream(t *testing.T, r *realAPI, key, code string) streamAnswer {
	body, _ := json.Marshal(py(code))
	req, err := http.NewRequest("POST", r.url+"/v1/tool-calls", strings.NewReader(string(body)))
	if err != nil {
		return streamAnswer{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Idempotency-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return streamAnswer{err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	a := streamAnswer{code: res.StatusCode, replayed: res.Header.Get("Idempotent-Replayed"), err: err}
	if err == nil && res.StatusCode == 200 {
		a.events = parseCallSSE(t, b)
	}
	return a
}

// TestStreamedRetryAttachesAcrossReplicas: two servers over one Redis
// store. A streamed call runs through A; its streamed retry through B while
// it runs attaches (Idempotent-Replayed: true) and ends with A's final
// event; the call ran once. Then, with the reservation gone as if A had
// died (its lease lapsed), a retry through B takes the call over and runs
// it with the same dispatcher IdempotencyKey (which attaches to the job).
func TestStreamedRetryAttachesAcrossReplicas(t *testing.T) {
	st := sharedStores()[0].open(t)
	g := newGatedDispatcher()
	mut := func(_ *Config, d *Deps) { d.Dispatcher, d.State = g, st }
	a, b := newRealAPI(t, mut), newRealAPI(t, mut)

	var wg sync.WaitGroup
	var fromA, fromB streamAnswer
	wg.Add(1)
	go func() { defer wg.Done(); fromA = postStream(t, a, "k-attach", "x") }()
	first := <-g.started
	wg.Add(1)
	go func() { defer wg.Done(); fromB = postStream(t, b, "k-attach", "x") }()
	time.Sleep(300 * time.Millisecond) // B is attached and polling (a late B would replay: same assertions)
	g.open()
	wg.Wait()
	if fromA.err != nil || fromB.err != nil {
		t.Fatal(fromA.err, fromB.err)
	}
	if n := g.count(); n != 1 {
		t.Fatalf("%d dispatches across two replicas, want 1", n)
	}
	la, lb := fromA.events[len(fromA.events)-1], fromB.events
	if fromB.replayed != "true" || len(lb) != 1 || lb[0].Event != "result" || lb[0].Data != la.Data {
		t.Fatalf("attached retry through B: %q %+v\nA's final: %+v", fromB.replayed, lb, la)
	}
	if first.IdempotencyKey != "k-attach" {
		t.Errorf("dispatcher IdempotencyKey %q", first.IdempotencyKey)
	}

	// takeover: the first request's reservation lapses while B waits
	wg.Add(1)
	go func() { defer wg.Done(); fromA = postStream(t, a, "k-take", "y") }()
	<-g.started
	wg.Add(1)
	go func() { defer wg.Done(); fromB = postStream(t, b, "k-take", "y") }()
	time.Sleep(300 * time.Millisecond)
	if err := st.Delete(context.Background(), state.Key{Kind: "idem", Owner: "alice", ID: "k-take"}, 0); err != nil { // as the lease lapsing
		t.Fatal(err)
	}
	var second dispatcher.Call
	select {
	case second = <-g.started:
	case <-time.After(testscale.D(10 * time.Second)):
		t.Fatal("B did not take the call over after the reservation lapsed")
	}
	g.open()
	wg.Wait()
	if second.IdempotencyKey != "k-take" || fromB.replayed != "true" || fromB.events[len(fromB.events)-1].Event != "result" {
		t.Fatalf("takeover: key %q, %+v", second.IdempotencyKey, fromB)
	}
	if _, err := st.Get(context.Background(), state.Key{Kind: "idem", Owner: "alice", ID: "k-take"}); err != nil {
		t.Fatalf("answer not stored after the takeover: %v", err)
	}
}
