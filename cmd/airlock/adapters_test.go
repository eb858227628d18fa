package main

import (
	"context"
	"github.com/airlock-dev/airlock/internal/testscale"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/keys"
)

// TestAgentCallsGetTheKeysCeiling: an agent run's calls are bounded like
// the owner's own API calls: the server defaults, or what the key's policy
// grants.
func TestAgentCallsGetTheKeysCeiling(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keys")
	_ = os.WriteFile(file, []byte("alice:alice-key-0123456789abcdef timeout_seconds=60\nbob:bob-key-0123456789abcdef\n"), 0o600)
	ks, err := keys.Load(file, "")
	if err != nil {
		t.Fatal(err)
	}
	eng := &fakeEngine{}
	st, err := buildStackWith(context.Background(), &stackFlags{queueName: "a", keys: ks}, slog.New(slog.DiscardHandler),
		func(*slog.Logger, prometheus.Registerer) (stackEngine, error) { return eng, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	tools := agentTools{Dispatcher: st.disp, keys: ks}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	run := func(owner string) dispatcher.Result {
		return tools.Run(ctx, dispatcher.Call{Name: dispatcher.ToolRunPython, Arguments: []byte(`{"code": "1", "timeout_seconds": 45}`), Owner: owner})
	}
	if r := run("alice"); r.Status != dispatcher.StatusOK {
		t.Errorf("alice (granted 60 s) asking 45 s: %s %s", r.Status, r.Content)
	}
	if r := run("bob"); r.Status != dispatcher.StatusRejected || r.Code != core.ErrInvalid {
		t.Errorf("bob (the 10 s default) asking 45 s: %s %s", r.Status, r.Content)
	}
}
