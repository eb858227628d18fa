package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/agent/agenttest"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/wire"
)

// approvalTools holds execute_shell for approval and counts executions.
func approvalTools(executed *atomic.Int32) *fakeTools {
	return &fakeTools{
		run: func(ctx context.Context, c dispatcher.Call) dispatcher.Result {
			if c.Name == "execute_shell" {
				return dispatcher.Result{Status: dispatcher.StatusPendingApproval, ApprovalToken: "tok-" + c.ID,
					Content: "waiting for approval"}
			}
			executed.Add(1)
			return defaultResult(c)
		},
		approve: func(ctx context.Context, token string) dispatcher.Result {
			executed.Add(1)
			return dispatcher.Result{Status: dispatcher.StatusOK, Content: "shell output for " + token}
		},
	}
}

// waitApproval follows events until approval_needed and returns its token.
func waitApproval(t *testing.T, h *harness, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch, err := h.m.Events(ctx, "alice", id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for ev := range ch {
		if ev.Type == wire.EventApprovalNeeded {
			d := ofType([]wire.RunEvent{ev}, wire.EventApprovalNeeded)[0]
			return d["token"].(string)
		}
	}
	t.Fatal("no approval_needed event")
	return ""
}

func TestApprovalPauseAndResumeRunsOnce(t *testing.T) {
	var executed atomic.Int32
	tools := approvalTools(&executed)
	h := newHarness(t, Config{}, false, tools,
		agenttest.CallTools(py("p", "1"), agenttest.Call{ID: "s", Name: "execute_shell", Arguments: `{"command":"rm -rf build"}`}),
		agenttest.Say("cleaned"))
	v, err := h.m.Start(RunRequest{Goal: "clean", Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	token := waitApproval(t, h, v.ID)
	if token != "tok-s" {
		t.Fatalf("token = %q", token)
	}
	mid, _ := h.m.Get("alice", v.ID)
	if mid.Status != wire.RunWaitingApproval || len(mid.PendingApprovals) != 1 || mid.PendingApprovals[0] != token {
		t.Fatalf("paused view = %+v", mid)
	}
	if err := h.m.Approve("bob", v.ID, token, true, ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("other owner's approve: %v", err)
	}
	// Two concurrent approvals: exactly one is accepted.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h.m.Approve("alice", v.ID, token, true, "")
		}()
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) || !(errors.Is(errs[0], ErrNotPending) || errors.Is(errs[1], ErrNotPending)) {
		t.Fatalf("approve errors = %v", errs)
	}
	end, evs := h.wait(v.ID)
	if end.Status != wire.RunDone || end.FinalAnswer != "cleaned" || len(end.PendingApprovals) != 0 {
		t.Fatalf("view = %+v", end)
	}
	if n := executed.Load(); n != 2 { // run_python once + the approved shell call once
		t.Fatalf("executed %d times", n)
	}
	tm := toolMessages(h.srv.Requests()[1])
	if len(tm) != 2 || tm[0].ToolCallID != "p" || tm[1].ToolCallID != "s" || tm[1].Content != "shell output for tok-s" {
		t.Fatalf("tool messages = %+v", tm)
	}
	if err := h.m.Approve("alice", v.ID, token, true, ""); !errors.Is(err, ErrNotPending) {
		t.Fatalf("approve after the end: %v", err)
	}
	if len(ofType(evs, wire.EventApprovalNeeded)) != 1 {
		t.Fatal("approval_needed missing from the replay")
	}
}

func TestApprovalRejectedReachesModel(t *testing.T) {
	bothModes(t, func(t *testing.T, stream bool) {
		var executed atomic.Int32
		tools := approvalTools(&executed)
		h := newHarness(t, Config{}, stream, tools,
			agenttest.CallTools(agenttest.Call{ID: "s", Name: "execute_shell", Arguments: `{"command":"curl x | sh"}`}),
			agenttest.Say("understood"))
		v, err := h.m.Start(RunRequest{Goal: "install", Owner: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		token := waitApproval(t, h, v.ID)
		if err := h.m.Approve("alice", v.ID, token, false, "no piping to sh"); err != nil {
			t.Fatal(err)
		}
		end, _ := h.wait(v.ID)
		if end.Status != wire.RunDone || executed.Load() != 0 {
			t.Fatalf("view = %+v, executed = %d", end, executed.Load())
		}
		tm := toolMessages(h.srv.Requests()[1])
		if len(tm) != 1 || !strings.Contains(tm[0].Content, "rejected") || !strings.Contains(tm[0].Content, "no piping to sh") {
			t.Fatalf("tool messages = %+v", tm)
		}
		if len(tools.rejected) != 1 || len(tools.approved) != 0 {
			t.Fatalf("rejected = %v, approved = %v", tools.rejected, tools.approved)
		}
	})
}

func TestCancelWhileWaitingApprovalReleasesIt(t *testing.T) {
	var executed atomic.Int32
	tools := approvalTools(&executed)
	h := newHarness(t, Config{}, false, tools,
		agenttest.CallTools(agenttest.Call{ID: "s", Name: "execute_shell", Arguments: `{"command":"ls"}`}))
	v, err := h.m.Start(RunRequest{Goal: "x", Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	token := waitApproval(t, h, v.ID)
	if err := h.m.Cancel("alice", v.ID); err != nil {
		t.Fatal(err)
	}
	end, _ := h.wait(v.ID)
	if end.Status != wire.RunCancelled || executed.Load() != 0 {
		t.Fatalf("view = %+v", end)
	}
	tools.mu.Lock()
	defer tools.mu.Unlock()
	if len(tools.rejected) != 1 || !strings.HasPrefix(tools.rejected[0], token) {
		t.Fatalf("dispatcher approvals not released: %v", tools.rejected)
	}
}
