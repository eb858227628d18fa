package sessionrecords

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
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
