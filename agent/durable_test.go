package agent

import (
	"context"
	"errors"
	"github.com/airlock-dev/airlock/internal/testscale"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/agent/agenttest"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/approvals"
	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// killableStore is a replica's view of a shared store: once killed every
// operation fails, as if the replica had died (it can no longer write).
type killableStore struct {
	state.Store
	dead atomic.Bool
}

func (k *killableStore) err() error {
	if k.dead.Load() {
		return state.ErrUnavailable
	}
	return nil
}

func (k *killableStore) Put(ctx context.Context, key state.Key, v []byte, o state.PutOptions) (int64, error) {
	if err := k.err(); err != nil {
		return 0, err
	}
	return k.Store.Put(ctx, key, v, o)
}

func (k *killableStore) Get(ctx context.Context, key state.Key) (state.Item, error) {
	if err := k.err(); err != nil {
		return state.Item{}, err
	}
	return k.Store.Get(ctx, key)
}

func (k *killableStore) Delete(ctx context.Context, key state.Key, v int64) error {
	if err := k.err(); err != nil {
		return err
	}
	return k.Store.Delete(ctx, key, v)
}

func (k *killableStore) List(ctx context.Context, kind, owner, after string, n int) ([]state.Item, error) {
	if err := k.err(); err != nil {
		return nil, err
	}
	return k.Store.List(ctx, kind, owner, after, n)
}

func (k *killableStore) Append(ctx context.Context, key state.Key, d []byte, n int, ttl time.Duration) (int64, error) {
	if err := k.err(); err != nil {
		return 0, err
	}
	return k.Store.Append(ctx, key, d, n, ttl)
}

func (k *killableStore) Range(ctx context.Context, key state.Key, after int64, n int, wait time.Duration) ([]state.Entry, error) {
	if err := k.err(); err != nil {
		return nil, err
	}
	return k.Store.Range(ctx, key, after, n, wait)
}

// replicas is a set of Managers sharing one store, one model server and
// one approvals store, each with its own tools.
type replicas struct {
	t      *testing.T
	srv    *agenttest.Server
	shared state.Store
	stores []*killableStore
	tools  []*fakeTools
	ms     []*Manager
}

// newReplicas starts n Managers with short leases.
func newReplicas(t *testing.T, n int, tools func() *fakeTools, turns ...agenttest.Turn) *replicas {
	t.Helper()
	return newReplicasOn(t, state.NewMemory(nil), n, tools, turns...)
}

// newReplicasOn is newReplicas sharing the given store.
func newReplicasOn(t *testing.T, shared state.Store, n int, tools func() *fakeTools, turns ...agenttest.Turn) *replicas {
	t.Helper()
	rs := &replicas{t: t, srv: agenttest.NewServer(turns...), shared: shared}
	tr := &http.Transport{}
	pending := approvals.NewMemory(nil)
	for i := range n {
		ks := &killableStore{Store: rs.shared}
		ft := tools()
		p := Provider{BaseURL: rs.srv.URL, APIKey: testKey, Model: "test-model", HTTPClient: &http.Client{Transport: tr},
			Retries: 1, RetryBaseDelay: time.Millisecond, RetryMaxDelay: 2 * time.Millisecond}
		m := NewManager(ManagerConfig{
			Store: ks, Pending: pending, ReplicaID: string(rune('A' + i)),
			LeaseTTL: 400 * time.Millisecond, LeaseRenew: 100 * time.Millisecond,
			ScanEvery: 100 * time.Millisecond, PollWait: 100 * time.Millisecond,
		}, ft, p, slog.New(slog.DiscardHandler))
		rs.stores, rs.tools, rs.ms = append(rs.stores, ks), append(rs.tools, ft), append(rs.ms, m)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
		defer cancel()
		for _, m := range rs.ms {
			if err := m.Close(ctx); err != nil {
				t.Errorf("close: %v", err)
			}
		}
		rs.srv.Close()
		tr.CloseIdleConnections()
	})
	return rs
}

// kill makes replica i die: it can no longer reach the store and its
// loops stop.
func (rs *replicas) kill(i int) {
	rs.stores[i].dead.Store(true)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
		defer cancel()
		_ = rs.ms[i].Close(ctx)
	}()
}

// follow collects the events of id through replica i, after seq.
func (rs *replicas) follow(i int, id string, after int, until wire.EventType) []wire.RunEvent {
	rs.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	ch, err := rs.ms[i].Events(ctx, "alice", id, after)
	if err != nil {
		rs.t.Fatalf("events via %d: %v", i, err)
	}
	var evs []wire.RunEvent
	for ev := range ch {
		evs = append(evs, ev)
		if ev.Type == until {
			cancel()
		}
	}
	return evs
}

// keyCounts counts the tool calls per idempotency key over all replicas.
func (rs *replicas) keyCounts() map[string]int {
	out := map[string]int{}
	for _, ft := range rs.tools {
		for _, c := range ft.recorded() {
			out[c.IdempotencyKey]++
		}
	}
	return out
}

func TestRunTakenOverFromCheckpointRunsEveryToolOnce(t *testing.T) {
	takeover(t, state.NewMemory(nil))
}

func TestRunTakenOverOnRedis(t *testing.T) {
	srv := redistest.Start(t, false)
	takeover(t, state.NewRedis(srv.Client(t), "test:runs:"))
}

// takeover kills the replica driving a 5-step run before its step 3 and
// checks the other finishes it, each tool call run once.
func takeover(t *testing.T, shared state.Store) {
	var rs *replicas
	killed := make(chan struct{})
	kill := func(req agenttest.Request) agenttest.Reply {
		// Replica A asks for step 3 and dies while waiting for the answer.
		rs.kill(0)
		close(killed)
		<-req.Ctx.Done()
		return agenttest.Reply{Content: "lost"}
	}
	rs = newReplicasOn(t, shared, 2, func() *fakeTools { return &fakeTools{} },
		agenttest.CallTools(py("a1", "1")), agenttest.CallTools(py("a2", "2")), kill,
		agenttest.CallTools(py("a3", "3")), agenttest.CallTools(py("a4", "4")), agenttest.Say("done"))
	v, err := rs.ms[0].Start(RunRequest{Goal: "five steps", Owner: "alice", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	// A client reads the stream through A until A dies, then resumes on B
	// with the last id it saw.
	before := rs.follow(0, v.ID, 0, wire.EventToolResult)
	<-killed
	start := time.Now()
	last := before[len(before)-1].Seq
	after := rs.follow(1, v.ID, last, wire.EventRunFinished)
	took := time.Since(start)
	all := append(append([]wire.RunEvent(nil), before...), after...)
	checkSeq(t, all)
	got, err := rs.ms[1].Get("alice", v.ID)
	if err != nil || got.Status != wire.RunDone || got.FinalAnswer != "done" || got.Steps != 5 {
		t.Fatalf("run after takeover: %+v, %v", got, err)
	}
	counts := rs.keyCounts()
	if len(counts) != 4 {
		t.Fatalf("tool calls by key: %v", counts)
	}
	for k, n := range counts {
		if n != 1 || !strings.HasPrefix(k, v.ID+"/") {
			t.Fatalf("tool call %s executed %d times (all: %v)", k, n, counts)
		}
	}
	if a, b := len(rs.tools[0].recorded()), len(rs.tools[1].recorded()); a != 2 || b != 2 {
		t.Fatalf("calls on A %d, on B %d; want 2 and 2", a, b)
	}
	for _, c := range rs.tools[1].recorded() {
		if c.SessionID != "s1" {
			t.Fatalf("resumed call lost its session: %+v", c)
		}
	}
	// The resumed model call sees the whole conversation so far.
	reqs := rs.srv.Requests()
	if len(reqs) != 6 || !strings.Contains(reqs[3].Text("tool"), "ran run_python") || len(toolMessages(reqs[3])) != 2 {
		t.Fatalf("resumed request: %d requests, tools %q", len(reqs), reqs[len(reqs)-1].Text("tool"))
	}
	if took > 10*time.Second {
		t.Fatalf("takeover took %v", took)
	}
}

func TestRunResumedMidTurnSkipsRecordedResults(t *testing.T) {
	var rs *replicas
	var once sync.Once
	block := make(chan struct{})
	rs = newReplicas(t, 2, func() *fakeTools {
		ft := &fakeTools{}
		ft.run = func(ctx context.Context, c dispatcher.Call) dispatcher.Result {
			if c.ID == "b" && ft == rs.tools[0] {
				// A dies while b runs, after a's result was recorded.
				once.Do(func() { rs.kill(0); close(block) })
				<-ctx.Done()
				return dispatcher.Result{Status: dispatcher.StatusInternal, Content: "cancelled"}
			}
			return defaultResult(c)
		}
		return ft
	}, agenttest.CallTools(py("a", "1")), agenttest.CallTools(py("b", "2")), agenttest.Say("ok"))
	rs.ms[0].cfg.Loop.MaxParallel = 1
	v, err := rs.ms[0].Start(RunRequest{Goal: "x", Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	<-block
	evs := rs.follow(1, v.ID, 0, wire.EventRunFinished)
	checkSeq(t, evs)
	got, _ := rs.ms[1].Get("alice", v.ID)
	if got.Status != wire.RunDone {
		t.Fatalf("status %s", got.Status)
	}
	// b ran on A (interrupted) and again on B with the same key; a only on A.
	var keysA, keysB []string
	for _, c := range rs.tools[0].recorded() {
		keysA = append(keysA, c.IdempotencyKey)
	}
	for _, c := range rs.tools[1].recorded() {
		keysB = append(keysB, c.IdempotencyKey)
	}
	if len(keysA) != 2 || len(keysB) != 1 || keysB[0] != keysA[1] || keysB[0] != v.ID+"/2/0" {
		t.Fatalf("keys on A %v, on B %v", keysA, keysB)
	}
	if n := len(rs.srv.Requests()); n != 3 {
		t.Fatalf("model requests %d, want 3 (no repeat after the answer was recorded)", n)
	}
}

func TestApprovalArrivesAtAnotherReplica(t *testing.T) {
	var executed atomic.Int32
	rs := newReplicas(t, 2, func() *fakeTools { return approvalTools(&executed) },
		agenttest.CallTools(agenttest.Call{ID: "s", Name: "execute_shell", Arguments: `{"command":"make"}`}),
		agenttest.Say("built"))
	v, err := rs.ms[0].Start(RunRequest{Goal: "build", Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	evs := rs.follow(1, v.ID, 0, wire.EventApprovalNeeded)
	token := ofType(evs, wire.EventApprovalNeeded)[0]["token"].(string)
	if got, _ := rs.ms[1].Get("alice", v.ID); got.Status != wire.RunWaitingApproval || len(got.PendingApprovals) != 1 {
		t.Fatalf("via B while waiting: %+v", got)
	}
	if err := rs.ms[1].Approve("alice", v.ID, token, true, ""); err != nil {
		t.Fatal(err)
	}
	if err := rs.ms[1].Approve("alice", v.ID, token, true, ""); !errors.Is(err, ErrNotPending) {
		t.Fatalf("second approval: %v", err)
	}
	rs.follow(1, v.ID, 0, wire.EventRunFinished)
	got, _ := rs.ms[1].Get("alice", v.ID)
	if got.Status != wire.RunDone || executed.Load() != 1 || len(rs.tools[0].approved) != 1 {
		t.Fatalf("after approval via B: %+v executed %d", got, executed.Load())
	}
}

func TestCancelThroughAnotherReplica(t *testing.T) {
	started := make(chan struct{})
	var once sync.Once
	rs := newReplicas(t, 2, func() *fakeTools {
		return &fakeTools{run: func(ctx context.Context, c dispatcher.Call) dispatcher.Result {
			once.Do(func() { close(started) })
			<-ctx.Done()
			return dispatcher.Result{Status: dispatcher.StatusInternal, Content: "cancelled"}
		}}
	}, agenttest.CallTools(py("a", "1")))
	v, err := rs.ms[0].Start(RunRequest{Goal: "x", Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if err := rs.ms[1].Cancel("alice", v.ID); err != nil {
		t.Fatal(err)
	}
	rs.follow(1, v.ID, 0, wire.EventRunFinished)
	if got, _ := rs.ms[1].Get("alice", v.ID); got.Status != wire.RunCancelled {
		t.Fatalf("status %s", got.Status)
	}
}

func TestFollowUpContinuesConversation(t *testing.T) {
	h := newHarness(t, Config{}, false, nil,
		agenttest.CallTools(py("p", "6*7")), agenttest.Say("42"), agenttest.Say("84"))
	first, err := h.m.Start(RunRequest{Goal: "what is 6*7?", Owner: "alice", SessionID: "sess"})
	if err != nil {
		t.Fatal(err)
	}
	h.wait(first.ID)
	second, err := h.m.Start(RunRequest{Goal: "and twice that?", Owner: "alice", PreviousRunID: first.ID})
	if err != nil {
		t.Fatal(err)
	}
	end, _ := h.wait(second.ID)
	if end.Status != wire.RunDone || end.FinalAnswer != "84" {
		t.Fatalf("follow-up: %+v", end)
	}
	reqs := h.srv.Requests()
	last := reqs[len(reqs)-1]
	if u := last.Text("user"); !strings.Contains(u, "what is 6*7?") || !strings.Contains(u, "and twice that?") {
		t.Fatalf("follow-up user messages: %q", u)
	}
	if a := last.Text("assistant"); !strings.Contains(a, "42") || len(toolMessages(last)) != 1 {
		t.Fatalf("follow-up lacks the previous answer or tool result: %q", a)
	}
	if n := strings.Count(last.Text("system"), "You are a test agent"); n != 1 {
		t.Fatalf("system prompt %d times", n)
	}
	// The follow-up ran on the previous run's session.
	h2, _ := h.m.getRecord(context.Background(), "alice", second.ID)
	if h2.Request.SessionID != "sess" {
		t.Fatalf("session %q", h2.Request.SessionID)
	}
	if _, err := h.m.Start(RunRequest{Goal: "x", Owner: "bob", PreviousRunID: first.ID}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("other owner's previous run: %v", err)
	}
	if _, err := h.m.Start(RunRequest{Goal: "x", Owner: "alice", PreviousRunID: "run_nope"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown previous run: %v", err)
	}
}

func TestFollowUpOfRunningRunConflicts(t *testing.T) {
	release := make(chan struct{})
	tools := &fakeTools{run: func(ctx context.Context, c dispatcher.Call) dispatcher.Result {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return defaultResult(c)
	}}
	h := newHarness(t, Config{}, false, tools, agenttest.CallTools(py("p", "1")), agenttest.Say("ok"))
	v, err := h.m.Start(RunRequest{Goal: "x", Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.m.Start(RunRequest{Goal: "y", Owner: "alice", PreviousRunID: v.ID})
	if core.CodeOf(err) != core.ErrConflict {
		t.Fatalf("follow-up of a running run: %v (code %s)", err, core.CodeOf(err))
	}
	close(release)
	h.wait(v.ID)
}

func TestCheckpointCompactedKeepsEveryMessage(t *testing.T) {
	big := strings.Repeat("x", 100<<10)
	cp := &checkpoint{Step: 2, Msgs: []message{{Role: "user", Content: "goal"}, {Role: "tool", ToolCallID: "a", Content: big}},
		Turn: &turn{Calls: []toolCall{{ID: "b", Name: "run_python"}}, Results: map[int]string{0: big}}}
	c := cp.compacted(1024)
	if len(c.Msgs) != 2 || c.Msgs[0].Content != "goal" || len(c.Msgs[1].Content) > 2048 || len(c.Turn.Results[0]) > 2048 {
		t.Fatalf("compacted: %d msgs, sizes %d %d", len(c.Msgs), len(c.Msgs[1].Content), len(c.Turn.Results[0]))
	}
	if len(cp.Msgs[1].Content) != len(big) {
		t.Fatal("compacted changed the original")
	}
}
