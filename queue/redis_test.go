package queue

import (
	"github.com/airlock-dev/airlock/internal/redistest"

	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// testLogger sends logs to the test log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// testWriter adapts testing.TB to io.Writer.
type testWriter struct{ t testing.TB }

// Write logs p.
func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// queueSeq names each test's queue uniquely on a shared server.
var queueSeq atomic.Int64

// TestRedisContract runs the contract suite on the Redis queue, each test
// on its own queue name (hence its own keys) of one redis-server.
func TestRedisContract(t *testing.T) {
	srv := redistest.Start(t, false)
	runContract(t, func(t *testing.T, cfg Config, reg prometheus.Registerer) Queue {
		cfg.RedisURL = srv.URL()
		cfg.Name = fmt.Sprintf("contract%d", queueSeq.Add(1))
		q, err := NewRedis(cfg, Deps{Registerer: reg, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Close() })
		return q
	})
}
