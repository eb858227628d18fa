package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/agent/agenttest"
	"github.com/airlock-dev/airlock/wire"
)

func TestManagerOwnersAndNotFound(t *testing.T) {
	h := newHarness(t, Config{}, false, nil, agenttest.Say("hi"))
	v, _ := h.run("hello")
	if _, err := h.m.Get("bob", v.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get other owner: %v", err)
	}
	if _, err := h.m.Get("alice", "run_nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get unknown: %v", err)
	}
	if _, err := h.m.Events(context.Background(), "bob", v.ID, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("events other owner: %v", err)
	}
	if err := h.m.Cancel("bob", v.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cancel other owner: %v", err)
	}
	if err := h.m.Cancel("alice", v.ID); err != nil {
		t.Fatalf("cancel finished run: %v", err)
	}
	if got, _ := h.m.Get("alice", v.ID); got.Status != wire.RunDone || got.Ended.IsZero() {
		t.Fatalf("view = %+v", got)
	}
}

func TestManagerNoModel(t *testing.T) {
	m := NewManager(ManagerConfig{}, &fakeTools{}, ResolveProvider(Provider{}, func(string) string { return "" }), nil)
	defer m.Close(context.Background())
	if m.Configured() {
		t.Fatal("configured without a model")
	}
	if _, err := m.Start(RunRequest{Goal: "x"}); !errors.Is(err, ErrNoModel) {
		t.Fatalf("start: %v", err)
	}
}

func TestManagerInvalidRequest(t *testing.T) {
	h := newHarness(t, Config{}, false, nil)
	if _, err := h.m.Start(RunRequest{Owner: "alice"}); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("empty goal: %v", err)
	}
	if _, err := h.m.Start(RunRequest{Owner: "alice", Messages: []byte(`[{"role":"wizard","content":"x"}]`)}); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("bad role: %v", err)
	}
}

func TestEventsResumeAfterSeq(t *testing.T) {
	h := newHarness(t, Config{}, true, nil, agenttest.CallTools(py("a", "1")), agenttest.Say("done"))
	v, all := h.run("resume")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch, err := h.m.Events(ctx, "alice", v.ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []wire.RunEvent
	for ev := range ch {
		got = append(got, ev)
	}
	if len(got) != len(all)-3 || got[0].Seq != 4 || got[len(got)-1].Type != wire.EventRunFinished {
		t.Fatalf("resumed %d of %d events, first seq %d", len(got), len(all), got[0].Seq)
	}
}

func TestEventsChannelClosesOnContext(t *testing.T) {
	arrived := make(chan struct{})
	h := newHarness(t, Config{}, false, nil, func(req agenttest.Request) agenttest.Reply {
		close(arrived)
		<-req.Ctx.Done()
		return agenttest.Reply{Status: 500}
	})
	v, err := h.m.Start(RunRequest{Goal: "x", Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	<-arrived
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := h.m.Events(ctx, "alice", v.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	<-ch // step_started
	cancel()
	for range ch {
	}
	if err := h.m.Cancel("alice", v.ID); err != nil {
		t.Fatal(err)
	}
	h.wait(v.ID)
}

func TestManagerForgetsRunsAfterRetention(t *testing.T) {
	h := newHarnessWith(t, ManagerConfig{Retention: 200 * time.Millisecond}, false, nil, Provider{},
		agenttest.Say("1"))
	v, _ := h.run("x")
	if _, err := h.m.Get("alice", v.ID); err != nil {
		t.Fatalf("finished run forgotten at once: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := h.m.Get("alice", v.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("run kept past its retention: %v", err)
	}
}

func TestManagerBusyAndClosed(t *testing.T) {
	arrived := make(chan struct{})
	h := newHarnessWith(t, ManagerConfig{MaxActive: 1}, false, nil, Provider{}, func(req agenttest.Request) agenttest.Reply {
		close(arrived)
		<-req.Ctx.Done()
		return agenttest.Reply{Status: 500}
	})
	v, err := h.m.Start(RunRequest{Goal: "x", Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	<-arrived
	if _, err := h.m.Start(RunRequest{Goal: "y", Owner: "alice"}); !errors.Is(err, ErrBusy) {
		t.Fatalf("second start: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.m.Get("alice", v.ID); got.Status != wire.RunCancelled || !strings.Contains(got.Error, "closed") {
		t.Fatalf("view after close = %+v", got)
	}
	if _, err := h.m.Start(RunRequest{Goal: "z", Owner: "alice"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("start after close: %v", err)
	}
}
