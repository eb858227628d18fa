package batch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// expiringQueue acts like the queue for a job that expired while its
// worker was dead: the first call of each item expires, and every later
// call under a key that expired answers the same expiry.
type expiringQueue struct {
	mu      sync.Mutex
	expired map[string]bool
	keys    []string
}

func (d *expiringQueue) Run(_ context.Context, c dispatcher.Call) dispatcher.Result {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.keys = append(d.keys, c.IdempotencyKey)
	first := true
	for k := range d.expired {
		if strings.HasPrefix(k, strings.SplitN(c.IdempotencyKey, "/expired-", 2)[0]) {
			first = false
		}
	}
	if d.expired[c.IdempotencyKey] || first {
		d.expired[c.IdempotencyKey] = true
		err := core.E("queue", core.ErrDeadline, fmt.Errorf("job deadline exceeded: %w", context.DeadlineExceeded))
		return dispatcher.Result{Status: dispatcher.StatusUnavailable, Err: err}
	}
	return dispatcher.Result{Status: dispatcher.StatusOK, Sandbox: &core.Result{Stdout: "ran\n"}}
}

// TestExpiredJobRetriesUnderANewKey: an item whose job expired in the
// queue runs again under a key of its own (the expired key answers only
// its expiry; CI saw an item fail after 12 tries of one dead key).
func TestExpiredJobRetriesUnderANewKey(t *testing.T) {
	d := &expiringQueue{expired: map[string]bool{}}
	m, err := New(Config{LeaseTTL: time.Second, OwnerConcurrency: 2}, state.NewMemory(time.Now), d, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Create(context.Background(), "alice", Spec{Items: items(2, func(i int) string { return fmt.Sprintf(`{"code":"%d"}`, i) })})
	if err != nil {
		t.Fatal(err)
	}
	b = waitStatus(t, m, "alice", b.ID, wire.BatchCompleted)
	if b.RequestCounts != (wire.BatchCounts{Total: 2, Completed: 2}) {
		t.Fatalf("counts %+v, want both items ok; keys tried %v", b.RequestCounts, d.keys)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.keys) != 4 {
		t.Fatalf("keys tried %v, want each item's expired key then one new key", d.keys)
	}
	for _, k := range d.keys {
		if strings.HasSuffix(k, "/expired-1") == d.expired[k] {
			t.Errorf("key %s: expired %v", k, d.expired[k])
		}
	}
}
