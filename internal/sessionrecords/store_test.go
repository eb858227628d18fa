package sessionrecords

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/storetest"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/state"
)

// putCounter counts the writes made through a state store.
type putCounter struct {
	state.Store
	puts atomic.Int64
}

func (p *putCounter) Put(ctx context.Context, k state.Key, v []byte, o state.PutOptions) (int64, error) {
	p.puts.Add(1)
	return p.Store.Put(ctx, k, v, o)
}

// TestSessionTouchSlack: a touch on read writes only when the session was
// last used longer ago than a twentieth of its idle TTL, and a touch at a
// call's end always writes, so expiry moves by at most that slack.
func TestSessionTouchSlack(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	mem := state.NewMemory(clock)
	defer mem.Close()
	st := &putCounter{Store: mem}
	ss := New(st, 10*time.Minute, 0, clock)
	ctx := context.Background()
	if _, err := ss.Add(ctx, "alice", "s1", core.Limits{}, false); err != nil {
		t.Fatal(err)
	}
	base := st.puts.Load()
	now = now.Add(10 * time.Second) // within 30 s (10 min / 20)
	if _, ok := ss.Get(ctx, "alice", "s1", true); !ok {
		t.Fatal("session not found")
	}
	if got := st.puts.Load() - base; got != 0 {
		t.Fatalf("a touch 10 s after use wrote %d times, want 0", got)
	}
	now = now.Add(31 * time.Second)
	rec, ok := ss.Get(ctx, "alice", "s1", true)
	if !ok || st.puts.Load()-base != 1 || !rec.LastUsed.Equal(now) {
		t.Fatalf("a touch 41 s after use: ok=%v writes=%d last_used=%v, want one write at %v", ok, st.puts.Load()-base, rec.LastUsed, now)
	}
	now = now.Add(time.Second)
	ss.Touch(ctx, "alice", "s1")
	rec, _ = ss.Get(ctx, "alice", "s1", false)
	if !rec.LastUsed.Equal(now) || !rec.ExpiresAt.Equal(now.Add(10*time.Minute)) {
		t.Fatalf("after the end-of-call touch last_used=%v expires=%v, want %v and 10 min later", rec.LastUsed, rec.ExpiresAt, now)
	}
}

// TestContract runs the records on every backend: owners stay apart, a
// record expires idle or past its maximum life on the store's clock (and
// is deleted), a session's budgets count its owner's live records only.
func TestContract(t *testing.T) {
	for name, open := range storetest.Backends() {
		t.Run(name, func(t *testing.T) {
			now := time.Unix(1_700_000_000, 0)
			clock := func() time.Time { return now }
			ss := New(open(t), 10*time.Minute, time.Hour, clock)
			ctx := context.Background()
			rec, err := ss.Add(ctx, "alice", "s1", core.Limits{Memory: 512 << 20}, true)
			if err != nil || !rec.Background || !rec.ExpiresAt.Equal(now.Add(10*time.Minute)) {
				t.Fatalf("add: %+v %v", rec, err)
			}
			if _, ok := ss.Get(ctx, "bob", "s1", false); ok {
				t.Fatal("bob sees alice's session")
			}
			if _, err := ss.Add(ctx, "alice", "s2", core.Limits{}, false); err != nil {
				t.Fatal(err)
			}
			if got := ss.List(ctx, "alice"); len(got) != 2 || len(ss.List(ctx, "bob")) != 0 {
				t.Fatalf("list: %+v", got)
			}
			budget := keys.Budget{Sessions: 3, SessionMemory: 1 << 30}
			defaults := core.Limits{Memory: 256 << 20, CPUs: 1}
			if err := ss.CheckBudget(ctx, "alice", core.Limits{Memory: 300 << 20}, budget, defaults); !errors.Is(err, core.ErrQuota) {
				t.Fatalf("512 MiB + 256 MiB + 300 MiB over 1 GiB: %v", err)
			}
			if err := ss.CheckBudget(ctx, "alice", core.Limits{}, budget, defaults); err != nil {
				t.Fatalf("within the budgets: %v", err)
			}
			now = now.Add(9 * time.Minute)
			ss.Touch(ctx, "alice", "s1")
			now = now.Add(2 * time.Minute) // s2 idle 11 min, s1 2 min
			if _, ok := ss.Get(ctx, "alice", "s2", false); ok {
				t.Fatal("an idle record did not expire")
			}
			if _, ok := ss.Get(ctx, "alice", "s1", false); !ok {
				t.Fatal("a touched record expired")
			}
			now = now.Add(50 * time.Minute) // s1 past its hour of life, touched or not
			ss.Touch(ctx, "alice", "s1")
			if _, ok := ss.Get(ctx, "alice", "s1", false); ok || len(ss.List(ctx, "alice")) != 0 {
				t.Fatal("a record outlived its maximum life")
			}
		})
	}
}
