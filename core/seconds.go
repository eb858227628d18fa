package core

import (
	"math"
	"time"
)

// Seconds converts s seconds (a wire value such as timeout_seconds) to a
// Duration, saturating at the largest Duration instead of wrapping around,
// so an absurd value such as 9.3e9 stays over every limit and is refused
// by the check that compares it. NaN and negative values give a negative
// Duration, which every limit check refuses too.
func Seconds(s float64) time.Duration {
	switch ns := s * float64(time.Second); {
	case math.IsNaN(ns) || ns < 0:
		return -1
	case ns >= math.MaxInt64:
		return math.MaxInt64
	default:
		return time.Duration(ns)
	}
}
