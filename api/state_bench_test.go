package api

import (
	"fmt"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/redistest"
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
		{"redis", func(b *testing.B) state.Store {
			return state.NewRedis(redistest.Start(b, false).Client(b), "bench:")
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			st := bc.st(b)
			sessions := newSessionStore(st, time.Hour, 0, time.Now)
			if _, err := sessions.add("alice", "ses_1", core.Limits{}, false); err != nil {
				b.Fatal(err)
			}
			s := &Server{deps: Deps{State: st}}
			body := make([]byte, 300)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sessions.get("alice", "ses_1", false)
				sessions.get("alice", "ses_1", true)
				key := fmt.Sprint("k", i)
				k := state.Key{Kind: idemKind, Owner: "alice", ID: key}
				if _, err := st.Put(b.Context(), k, []byte(`{"fp":"x"}`), state.PutOptions{TTL: idemLease, IfVersion: -1}); err != nil {
					b.Fatal(err)
				}
				s.idemFinish("alice", key, "x", 200, body, false)
				sessions.touch("alice", "ses_1")
			}
		})
	}
}
