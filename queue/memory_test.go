package queue

import (
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
