package queue

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMemoryContract runs the contract suite on the in-process queue.
func TestMemoryContract(t *testing.T) {
	runContract(t, func(t *testing.T, cfg Config, reg prometheus.Registerer) Queue {
		q, err := NewMemory(cfg, Deps{Registerer: reg, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Close() })
		return q
	})
}

// TestOpenPicksBackend checks that Open chooses by configuration.
func TestOpenPicksBackend(t *testing.T) {
	q, err := Open(Config{}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if _, ok := q.(*Memory); !ok {
		t.Fatalf("Open without Redis = %T", q)
	}
	r, err := Open(Config{RedisURL: "redis://127.0.0.1:1/0"}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, ok := r.(*Redis); !ok {
		t.Fatalf("Open with Redis = %T", r)
	}
}

// TestMemoryListeningOnlyWithOnProgress: in-process the handler learns
// whether anyone receives its progress, so it can skip building messages.
func TestMemoryListeningOnlyWithOnProgress(t *testing.T) {
	q, err := NewMemory(contractConfig(), Deps{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	listening := make(chan bool, 2)
	runWorker(t, q, WorkerConfig{ID: "w1"}, HandlerFunc(func(ctx context.Context, j Job) (Reply, error) {
		listening <- Listening(ctx)
		return Reply{}, nil
	}))
	for _, c := range []struct {
		on   func([]byte)
		want bool
	}{{nil, false}, {func([]byte) {}, true}} {
		if _, err := q.Do(testCtx(t), Job{Owner: "alice", OnProgress: c.on}); err != nil {
			t.Fatal(err)
		}
		if got := <-listening; got != c.want {
			t.Fatalf("Listening = %v with OnProgress set %v", got, c.on != nil)
		}
	}
}
