// Package storetest opens the state stores a service's contract test runs
// on: the in-memory store, an embedded Bolt file in the test's temporary
// folder, and a private redis-server (internal/redistest; skipped without
// one, a failure in CI). Every store is closed when the test ends.
package storetest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/state"
)

// Backends returns a constructor per backend, by name: "memory", "bolt"
// and "redis".
func Backends() map[string]func(t *testing.T) state.Store {
	return map[string]func(t *testing.T) state.Store{
		"memory": func(*testing.T) state.Store { return state.NewMemory(time.Now) },
		"bolt": func(t *testing.T) state.Store {
			b, err := state.OpenBolt(filepath.Join(t.TempDir(), "state.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close() })
			return b
		},
		"redis": func(t *testing.T) state.Store {
			return state.NewRedis(redistest.Start(t, false).Client(t), "t:")
		},
	}
}
