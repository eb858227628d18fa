package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/sandbox"
)

// quieter makes each measured call start on a quiet machine: container
// removals finished, warm pools refilled and the CPUs close to idle, so no
// variant pays for the background work (pool refills, teardown) of another.
type quieter struct {
	threshold float64 // busy fraction of all CPUs counted as quiet
	window    time.Duration
	limit     time.Duration
	waits     int
	timeouts  int
}

// newQuieter measures the machine's background load (the quietest of a
// few windows) and sets the threshold a little above it, within 15–35%.
func newQuieter() *quieter {
	q := &quieter{window: 150 * time.Millisecond, limit: 3 * time.Second}
	base := 1.0
	for i := 0; i < 6; i++ {
		if b, err := cpuBusy(context.Background(), 250*time.Millisecond); err == nil {
			base = min(base, b)
		}
	}
	q.threshold = min(max(base*1.5+0.05, 0.15), 0.35)
	return q
}

// wait settles the engines, waits for their pools and then for the CPUs to
// be quiet for one window (or gives up after q.limit, counting a timeout).
func (q *quieter) wait(ctx context.Context, engines ...*sandbox.Engine) error {
	q.waits++
	for _, e := range engines {
		if e == nil {
			continue
		}
		e.Settle()
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := e.WaitWarm(wctx)
		cancel()
		if err != nil {
			return err
		}
	}
	deadline := time.Now().Add(q.limit)
	for time.Now().Before(deadline) {
		busy, err := cpuBusy(ctx, q.window)
		if err != nil {
			return err
		}
		if busy <= q.threshold {
			return nil
		}
	}
	q.timeouts++
	return nil
}

// cpuBusy returns the busy fraction of all CPUs over the window.
func cpuBusy(ctx context.Context, window time.Duration) (float64, error) {
	b1, t1, err := cpuTimes()
	if err != nil {
		return 0, err
	}
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(window):
	}
	b2, t2, err := cpuTimes()
	if err != nil {
		return 0, err
	}
	if t2 <= t1 {
		return 0, nil
	}
	return float64(b2-b1) / float64(t2-t1), nil
}

// cpuTimes reads busy and total jiffies from the first line of /proc/stat.
func cpuTimes() (busy, total uint64, err error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("unexpected /proc/stat line %q", line)
	}
	for i, s := range f[1:] {
		v, _ := strconv.ParseUint(s, 10, 64)
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total, nil
}
