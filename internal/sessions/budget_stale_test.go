package sessions

import (
	"context"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/state"
)

// TestBudgetForgetsSessionsTheSandboxLost: records of sessions the
// sandbox no longer has (a serve restarted, a worker gone) do not hold
// the owner's sessions budget: opening a session past the budget first
// forgets them, as listing does, instead of answering "this key has N
// open sessions" while GET /v1/sessions lists none.
func TestBudgetForgetsSessionsTheSandboxLost(t *testing.T) {
	ctx := context.Background()
	svc, be := newService(t, state.NewMemory(nil))
	budget := keys.Budget{Sessions: 2}
	for range 2 {
		if _, err := svc.Open(ctx, "alice", core.Limits{}, false, budget, core.Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	be.mu.Lock()
	clear(be.open) // the sandbox lost both
	be.mu.Unlock()
	v, err := svc.Open(ctx, "alice", core.Limits{}, false, budget, core.Limits{})
	if err != nil {
		t.Fatalf("open after the sandbox lost every session: %v", err)
	}
	if l := svc.List(ctx, "alice"); len(l) != 1 || l[0].ID != v.ID {
		t.Fatalf("list: %+v", l)
	}
	if _, err := svc.Open(ctx, "alice", core.Limits{}, false, budget, core.Limits{}); err != nil {
		t.Fatalf("the second of two: %v", err)
	}
	if _, err := svc.Open(ctx, "alice", core.Limits{}, false, budget, core.Limits{}); core.CodeOf(err) != core.ErrQuota {
		t.Fatalf("a third past a budget of two live sessions: %v", err)
	}
}

// TestViewNamesTheEnvironment: a session opened in an environment says so
// when read back (GET /v1/sessions/{id} and the list), not only in the
// answer to its POST.
func TestViewNamesTheEnvironment(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t, state.NewMemory(nil))
	v, err := svc.OpenIn(ctx, "alice", environments.Target{Name: "geo", Base: "python"}, core.Limits{}, false, keys.Budget{}, core.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := svc.records.Get(ctx, "alice", v.ID, false)
	got, err := svc.View(ctx, rec)
	if err != nil || got.Environment != "geo" {
		t.Fatalf("view: environment %q, %v", got.Environment, err)
	}
	if l := svc.List(ctx, "alice"); len(l) != 1 || l[0].Environment != "geo" {
		t.Fatalf("list: %+v", l)
	}
}
