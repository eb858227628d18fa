package state_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/state"
)

// benchStore measures a session-sized record write then read, and a log
// append, the work a warm session call adds.
func benchStore(b *testing.B, s state.Store) {
	ctx := context.Background()
	val := make([]byte, 512)
	b.Run("PutGet", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			k := state.Key{Kind: "session", Owner: "alice", ID: strconv.Itoa(i % 100)}
			if _, err := s.Put(ctx, k, val, state.PutOptions{}); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Get(ctx, k); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Append", func(b *testing.B) {
		k := state.Key{Kind: "run", Owner: "alice", ID: "r"}
		for i := 0; i < b.N; i++ {
			if _, err := s.Append(ctx, k, val, 1000, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchParallelPuts measures session-sized record writes from writers
// goroutines at once (b.N writes in all, spread evenly), the pattern of a
// batch's item goroutines plus interactive calls writing together.
func benchParallelPuts(b *testing.B, s state.Store, writers int) {
	ctx := context.Background()
	val := make([]byte, 512)
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		n := b.N / writers
		if w < b.N%writers {
			n++
		}
		wg.Add(1)
		go func(w, n int) {
			defer wg.Done()
			for i := 0; i < n; i++ {
				k := state.Key{Kind: "session", Owner: "alice", ID: strconv.Itoa(w) + "-" + strconv.Itoa(i%100)}
				if _, err := s.Put(ctx, k, val, state.PutOptions{}); err != nil {
					b.Error(err)
					return
				}
			}
		}(w, n)
	}
	wg.Wait()
}

func BenchmarkRedis(b *testing.B) {
	srv := redistest.Start(b, false)
	benchStore(b, state.NewRedis(srv.Client(b), "bench:"))
}

func BenchmarkBolt(b *testing.B) {
	s, err := state.OpenBolt(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	benchStore(b, s)
}

// BenchmarkBoltParallelPut is 8 goroutines writing records at once: with
// group commit they share one transaction (one fsync) per group.
func BenchmarkBoltParallelPut(b *testing.B) {
	s, err := state.OpenBolt(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	before := state.BoltCommits(s)
	benchParallelPuts(b, s, 8)
	b.ReportMetric(float64(state.BoltCommits(s)-before)/float64(b.N), "commits/op")
}
