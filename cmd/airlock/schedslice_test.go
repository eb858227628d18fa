package main

import (
	"testing"
	"time"
)

// TestSchedSliceFlagBounds: --sched-slice outside the kernel's 100us..100ms
// (and not 0) is refused before anything is set; 0 asks for nothing.
func TestSchedSliceFlagBounds(t *testing.T) {
	for _, d := range []time.Duration{time.Microsecond, 99 * time.Microsecond, 101 * time.Millisecond, -time.Millisecond} {
		f := &sandboxFlags{schedSlice: d}
		if err := f.applySchedSlice(nil); err == nil {
			t.Errorf("--sched-slice %v accepted", d)
		}
	}
	if err := (&sandboxFlags{}).applySchedSlice(nil); err != nil {
		t.Errorf("--sched-slice 0: %v", err)
	}
}
