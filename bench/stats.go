package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// series is one variant's latency samples plus its failures.
type series struct {
	name     string
	d        []time.Duration
	failed   int
	firstErr string
	note     string // extra fact for the report
}

// add records a successful sample.
func (s *series) add(d time.Duration) { s.d = append(s.d, d) }

// fail records a failed call, keeping the first reason.
func (s *series) fail(err error) {
	s.failed++
	if s.firstErr == "" && err != nil {
		s.firstErr = err.Error()
	}
}

// pct returns the p-th percentile (nearest rank) of the samples, 0 if none.
func (s *series) pct(p float64) time.Duration { return percentile(s.d, p) }

// max returns the largest sample.
func (s *series) max() time.Duration { return percentile(s.d, 100) }

// percentile is the nearest-rank percentile of ds (not modified).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

// ms formats a duration in milliseconds with precision that suits its size.
func ms(d time.Duration) string {
	if d == 0 {
		return "—"
	}
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v < 1:
		return fmt.Sprintf("%.3f ms", v)
	case v < 10:
		return fmt.Sprintf("%.2f ms", v)
	case v < 100:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.0f ms", v)
}

// signedMS formats a difference in milliseconds with a sign.
func signedMS(d time.Duration) string {
	if d < 0 {
		return "−" + ms(-d)
	}
	return "+" + ms(d)
}

// ratio formats base/x as "N×" (how many times faster x is than base).
func ratio(base, x time.Duration) string {
	if base <= 0 || x <= 0 {
		return "—"
	}
	return times(float64(base) / float64(x))
}

// times formats a factor.
func times(f float64) string {
	switch {
	case f >= 100:
		return fmt.Sprintf("%.0f×", f)
	case f >= 10:
		return fmt.Sprintf("%.1f×", f)
	}
	return fmt.Sprintf("%.2f×", f)
}

// mib formats bytes as MiB.
func mib(b int64) string {
	if b <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// failures renders a failure count with the first reason, short.
func (s *series) failures() string {
	if s.failed == 0 {
		return "0"
	}
	e := s.firstErr
	if len(e) > 80 {
		e = e[:80] + "…"
	}
	return fmt.Sprintf("%d (%s)", s.failed, e)
}
