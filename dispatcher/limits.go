package dispatcher

import (
	"time"

	"github.com/airlock-dev/airlock/core"
)

// lowerLimits returns a with each field lowered to b's where b is set and
// smaller (an unset field of a takes b's).
func lowerLimits(a, b core.Limits) core.Limits {
	return mergeLimits(a, b, func(x, y float64) bool { return y > 0 && (x == 0 || y < x) })
}

// capLimits lowers each set field of l to c's where c is set: a call's
// limits can only go down from the ceiling (an unset field stays unset).
func capLimits(l, c core.Limits) core.Limits {
	return mergeLimits(l, c, func(x, y float64) bool { return x > 0 && y > 0 && x > y })
}

// mergeLimits sets each field of a to b's where take says so.
func mergeLimits(a, b core.Limits, take func(x, y float64) bool) core.Limits {
	i64 := func(x *int64, y int64) {
		if take(float64(*x), float64(y)) {
			*x = y
		}
	}
	i64(&a.Memory, b.Memory)
	i64(&a.Pids, b.Pids)
	i64(&a.TmpfsBytes, b.TmpfsBytes)
	i64(&a.NoFile, b.NoFile)
	i64(&a.FileSize, b.FileSize)
	if take(float64(a.Timeout), float64(b.Timeout)) {
		a.Timeout = b.Timeout
	}
	if take(float64(a.OutputBytes), float64(b.OutputBytes)) {
		a.OutputBytes = b.OutputBytes
	}
	if take(a.CPUs, b.CPUs) {
		a.CPUs = b.CPUs
	}
	return a
}

// overLimits returns base with each field set in over replaced by it.
func overLimits(base, over core.Limits) core.Limits {
	pick := func(x, y int64) int64 {
		if y > 0 {
			return y
		}
		return x
	}
	base.Memory = pick(base.Memory, over.Memory)
	base.Pids = pick(base.Pids, over.Pids)
	base.TmpfsBytes = pick(base.TmpfsBytes, over.TmpfsBytes)
	base.NoFile = pick(base.NoFile, over.NoFile)
	base.FileSize = pick(base.FileSize, over.FileSize)
	base.Timeout = time.Duration(pick(int64(base.Timeout), int64(over.Timeout)))
	base.OutputBytes = int(pick(int64(base.OutputBytes), int64(over.OutputBytes)))
	if over.CPUs > 0 {
		base.CPUs = over.CPUs
	}
	return base
}
