package batch

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// peakDispatcher holds every call for delay and records the most calls
// running at once, across every Manager that shares it.
type peakDispatcher struct {
	delay   time.Duration
	calls   atomic.Int64
	running atomic.Int64
	peak    atomic.Int64
}

func (d *peakDispatcher) Run(ctx context.Context, c dispatcher.Call) dispatcher.Result {
	d.calls.Add(1)
	n := d.running.Add(1)
	defer d.running.Add(-1)
	for p := d.peak.Load(); n > p && !d.peak.CompareAndSwap(p, n); p = d.peak.Load() {
	}
	select {
	case <-ctx.Done():
		return dispatcher.Result{Status: dispatcher.StatusInternal, Err: ctx.Err()}
	case <-time.After(d.delay):
	}
	return dispatcher.Result{Status: dispatcher.StatusOK, Sandbox: &core.Result{Stdout: "ok\n"}}
}

// sharedStores are the backends two Managers (two replicas) share: a real
// Redis, and one Bolt file held by one process.
func sharedStores(t *testing.T) map[string]state.Store {
	rs := redistest.Start(t, false)
	red := state.NewRedis(rs.Client(t), fmt.Sprintf("t%d:", time.Now().UnixNano()))
	bolt, err := state.OpenBolt(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bolt.Close() })
	return map[string]state.Store{"redis": red, "bolt": bolt}
}

// TestOwnerCapSharedAcrossReplicas: two Managers on one store each run a
// batch of the same owner with a batch concurrency of 6; the owner's cap
// of 3 holds across both (the calls running at once never pass 3, and
// reach it), and every slot is released at the end.
func TestOwnerCapSharedAcrossReplicas(t *testing.T) {
	for name, st := range sharedStores(t) {
		t.Run(name, func(t *testing.T) {
			d := &peakDispatcher{delay: 40 * time.Millisecond}
			// A slot renewed later than its TTL would let a third item in.
			cfg := Config{LeaseTTL: testscale.D(2 * time.Second), OwnerConcurrency: 3, SlotTTL: testscale.D(2 * time.Second)}
			ctx := context.Background()
			var ms [2]*Manager
			var ids [2]string
			for i := range ms {
				cfg.Replica = fmt.Sprintf("r%d", i)
				ms[i], _ = New(cfg, st, d, nil)
			}
			for i, m := range ms {
				b, err := m.Create(ctx, "alice", Spec{Items: items(24, func(int) string { return `{"code":"x"}` }), Concurrency: 6})
				if err != nil {
					t.Fatal(err)
				}
				ids[i] = b.ID
			}
			for i, m := range ms {
				if b := waitStatus(t, m, "alice", ids[i], wire.BatchCompleted); b.RequestCounts.Completed != 24 {
					t.Fatalf("counts %+v", b.RequestCounts)
				}
			}
			if p := d.peak.Load(); p != 3 {
				t.Fatalf("peak of running items %d, want the owner cap 3 (two replicas, 12 workers)", p)
			}
			if d.calls.Load() != 48 {
				t.Fatalf("%d calls, want 48", d.calls.Load())
			}
			if n, err := ms[0].slots.inUse(ctx, "alice"); err != nil || n != 0 {
				t.Fatalf("%d slots still held (%v)", n, err)
			}
		})
	}
}

// TestDeadReplicaSlotsExpire: a replica that died holding all of an
// owner's slots (records nobody renews) blocks the owner only until the
// slots' TTL passes; another owner is not blocked at all.
func TestDeadReplicaSlotsExpire(t *testing.T) {
	for name, st := range sharedStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			ttl := 1500 * time.Millisecond
			for i := 0; i < 2; i++ { // what the dead replica left
				if _, err := st.Put(ctx, slotKey("alice", i), []byte("slot_dead"), state.PutOptions{TTL: ttl, IfVersion: -1}); err != nil {
					t.Fatal(err)
				}
			}
			left := time.Now()
			d := &peakDispatcher{delay: time.Millisecond}
			m, _ := New(Config{Replica: "live", LeaseTTL: time.Second, OwnerConcurrency: 2, SlotTTL: ttl}, st, d, nil)
			bob, err := m.Create(ctx, "bob", Spec{Items: items(3, func(int) string { return `{}` })})
			if err != nil {
				t.Fatal(err)
			}
			waitStatus(t, m, "bob", bob.ID, wire.BatchCompleted)
			if d.calls.Load() != 3 {
				t.Fatalf("bob ran %d items", d.calls.Load())
			}
			b, err := m.Create(ctx, "alice", Spec{Items: items(3, func(int) string { return `{}` })})
			if err != nil {
				t.Fatal(err)
			}
			waitStatus(t, m, "alice", b.ID, wire.BatchCompleted)
			if waited := time.Since(left); waited < ttl-100*time.Millisecond {
				t.Fatalf("alice's items ran after %s, before the dead replica's slots expired (%s)", waited, ttl)
			}
			if d.calls.Load() != 6 {
				t.Fatalf("%d calls, want 6", d.calls.Load())
			}
		})
	}
}

// TestSlotRenewedWhileItemRuns: an item running longer than the slot TTL
// keeps its slot (renewed), so a second item of the owner waits.
func TestSlotRenewedWhileItemRuns(t *testing.T) {
	st := state.NewMemory(time.Now)
	ttl := testscale.D(300 * time.Millisecond) // renewed every third of it
	s := newSlots(st, 1, ttl, discard())
	ctx := context.Background()
	release, err := s.acquire(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 3*ttl+ttl/3)
	defer cancel()
	if _, err := s.acquire(wctx, "alice"); err == nil {
		t.Fatal("a second item took the owner's only slot while the first held it")
	}
	release()
	if r2, err := s.acquire(ctx, "alice"); err != nil {
		t.Fatal(err)
	} else {
		r2()
	}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
