package api

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/idempotency"
	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/state"
)

// BenchmarkSessionCallState is the state store's share of one warm session
// tool call with an Idempotency-Key, the store operations the handler does
// (session lookup, lookup with touch, reserve, store the answer, touch at
// the end), on the memory store and on a real Redis; compare their ns/op
// (issue 13's goal: Redis adds ≤ 1 ms p50). Run with
// `go test -run x -bench SessionCallState ./api/`.
func BenchmarkSessionCallState(b *testing.B) {
	for _, bc := range []struct {
		name string
		st   func(b *testing.B) state.Store
	}{
		{"memory", func(*testing.B) state.Store { return state.NewMemory(nil) }},
		{"bolt", func(b *testing.B) state.Store {
			st, err := state.OpenBolt(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			return st
		}},
		{"redis", func(b *testing.B) state.Store {
			return state.NewRedis(redistest.Start(b, false).Client(b), "bench:")
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			st := bc.st(b)
			ctx := context.Background()
			sessions := sessionrecords.New(st, time.Hour, 0, time.Now)
			if _, err := sessions.Add(ctx, "alice", "ses_1", core.Limits{}, false); err != nil {
				b.Fatal(err)
			}
			keys := idempotency.New(st)
			body := make([]byte, 300)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sessions.Get(ctx, "alice", "ses_1", false)
				sessions.Get(ctx, "alice", "ses_1", true)
				r := idempotency.Request{Owner: "alice", Key: fmt.Sprint("k", i), Fingerprint: "x"}
				step, err := keys.Next(ctx, r, nil)
				if err != nil || step.Claim == nil {
					b.Fatal(step, err)
				}
				if err := keys.Finish(ctx, step.Claim, http.StatusOK, body, 0); err != nil {
					b.Fatal(err)
				}
				sessions.Touch(ctx, "alice", "ses_1")
			}
		})
	}
}

// BenchmarkSessionTouchState is the state store's share of one warm
// session call without an idempotency key (the route's lookup with touch,
// the touch at the end): on the embedded store the touch is a lazy write,
// no fsync (issue 33). Run with
// `go test -run x -bench SessionTouchState ./api/`.
func BenchmarkSessionTouchState(b *testing.B) {
	for _, name := range []string{"memory", "bolt"} {
		b.Run(name, func(b *testing.B) {
			var st state.Store = state.NewMemory(nil)
			if name == "bolt" {
				bs, err := state.OpenBolt(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = bs.Close() })
				st = bs
			}
			ctx := context.Background()
			sessions := sessionrecords.New(st, time.Hour, 0, time.Now)
			if _, err := sessions.Add(ctx, "alice", "ses_1", core.Limits{}, false); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, ok := sessions.Get(ctx, "alice", "ses_1", true); !ok {
					b.Fatal("session gone")
				}
				sessions.Touch(ctx, "alice", "ses_1")
			}
		})
	}
}
