package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/airlock-dev/airlock/internal/schedslice"
)

// applySchedSlice checks --sched-slice and asks for it for every thread of
// this process (0: nothing is asked). A kernel that refuses it is logged,
// not fatal: the slice is a latency hint.
func (f *sandboxFlags) applySchedSlice(log *slog.Logger) error {
	d := f.schedSlice
	if d == 0 {
		return nil
	}
	if d < schedslice.Min || d > schedslice.Max {
		return fmt.Errorf("--sched-slice %v: want 0 or %v..%v", d, schedslice.Min, schedslice.Max)
	}
	if _, err := schedslice.Apply(d); err != nil && log != nil {
		log.Warn("scheduler time slice not set", "slice", d.String(), "err", err)
	}
	return nil
}

// schedSliceDefault is --sched-slice's default.
const schedSliceDefault = 200 * time.Microsecond
