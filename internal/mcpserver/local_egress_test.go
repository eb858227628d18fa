package mcpserver

import (
	"context"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
)

// noDispatcher is a Dispatcher the session test never calls.
type noDispatcher struct{}

func (noDispatcher) Run(context.Context, dispatcher.Call) dispatcher.Result {
	return dispatcher.Result{}
}
func (noDispatcher) Approve(context.Context, string) (dispatcher.Result, error) {
	return dispatcher.Result{}, nil
}
func (noDispatcher) Reject(context.Context, string, string) (dispatcher.Result, error) {
	return dispatcher.Result{}, nil
}
func (noDispatcher) Registry() *dispatcher.Registry { return nil }

// TestLocalSessionsGetTheEgressPolicy: a local backend's sessions are
// opened with the owner's network policy, as the REST API's are; without
// the option they get none.
func TestLocalSessionsGetTheEgressPolicy(t *testing.T) {
	fx := newFakeExec()
	be, err := NewLocalWith(noDispatcher{}, fx, LocalOptions{Egress: func(owner string, _ []string) string { return "pypi.test:80 for " + owner }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := be.OpenSession(t.Context(), "local", core.Limits{}, ""); err != nil {
		t.Fatal(err)
	}
	plain, err := NewLocal(noDispatcher{}, fx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.OpenSession(t.Context(), "local", core.Limits{}, ""); err != nil {
		t.Fatal(err)
	}
	fx.mu.Lock()
	defer fx.mu.Unlock()
	if len(fx.reqs) != 2 || fx.reqs[0].Egress != "pypi.test:80 for local" || fx.reqs[1].Egress != "" {
		t.Errorf("session requests: %+v", fx.reqs)
	}
}
