package queue

import "testing"

// TestWorkerConfigReserve: InteractiveReserve defaults to 1, a negative
// one means none, and the worker's slots are Concurrency plus it.
func TestWorkerConfigReserve(t *testing.T) {
	for _, c := range []struct{ conc, reserve, wantReserve, wantSlots int }{
		{0, 0, 1, 2},
		{2, 0, 1, 3},
		{2, -1, 0, 2},
		{2, -5, 0, 2},
		{3, 2, 2, 5},
	} {
		got := WorkerConfig{Concurrency: c.conc, InteractiveReserve: c.reserve}.withDefaults()
		if got.InteractiveReserve != c.wantReserve || got.slots() != c.wantSlots {
			t.Errorf("Concurrency %d, InteractiveReserve %d: reserve %d, slots %d; want %d, %d",
				c.conc, c.reserve, got.InteractiveReserve, got.slots(), c.wantReserve, c.wantSlots)
		}
	}
}
