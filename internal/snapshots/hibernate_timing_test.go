package snapshots

import (
	"testing"
	"time"
)

// TestHibernateTiming: a session is hibernated within a twentieth of
// --hibernate-after (at most 10 s) before it, never after it: with
// --hibernate-after 5s a session idle 3.75 s was saved.
func TestHibernateTiming(t *testing.T) {
	for _, h := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, time.Minute, 15 * time.Minute} {
		every, idle := hibernateTiming(h)
		early := min(h/20, 10*time.Second)
		if idle < h-early {
			t.Errorf("--hibernate-after %v: saved after %v idle, more than %v early", h, idle, early)
		}
		if idle+every > h {
			t.Errorf("--hibernate-after %v: saved up to %v idle (tick %v), later than asked", h, idle+every, every)
		}
	}
}
