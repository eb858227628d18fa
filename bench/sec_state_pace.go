package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"time"
)

// paceTable is table 9b: the embedded store's session call again, alone,
// 10 ms apart and back to back, beside its 100 ms-apart series of table 9,
// and at each pace two fixed tasks of the bench's own (no call, no
// container): system calls, and arithmetic. On a VM the same system calls
// are slower the longer the machine idled before them: those columns say
// how much of the call's slowdown is the machine's.
func paceTable(ctx context.Context, n int, v *variant, rep *report) error {
	t := &table{title: "9b. The same session call (embedded store) by pace: 100 ms apart (table 9), 10 ms apart, back to back; and two fixed tasks at the same paces",
		head: []string{"pace", "calls", "p50", "p95", "p99", "failed", "20 reads of /proc/self/stat alone, p50", "SHA-256 of 256 KiB alone, p50"}}
	paces := []struct {
		name string
		gap  time.Duration
		s    *series // the call's series; nil: run here
	}{{"100 ms apart", 100 * time.Millisecond, v.s}, {"10 ms apart", 10 * time.Millisecond, nil}, {"back to back", 0, nil}}
	var reads, hash [3]time.Duration
	for i, p := range paces {
		var err error
		if reads[i], err = pacedWork(ctx, n, p.gap, procReads); err != nil {
			return err
		}
		if hash[i], err = pacedWork(ctx, n, p.gap, hashWork()); err != nil {
			return err
		}
	}
	for i, p := range paces {
		s := p.s
		if s == nil {
			s = &series{name: p.name}
			if err := paced(ctx, n, p.gap, s, v.run); err != nil {
				return err
			}
		}
		t.row(p.name, fmt.Sprint(len(s.d)), ms(s.pct(50)), ms(s.pct(95)), ms(s.pct(99)), s.failures(), ms(reads[i]), ms(hash[i]))
		if p.gap == 0 {
			rep.figureMS("session print(1) via REST, embedded store, back to back, p50", s.pct(50))
		}
	}
	t.note("One server, one session, the same call: only the time between calls differs. The two fixed tasks run in the bench's own process, no call, at the same paces: 20 opens and reads of /proc/self/stat took %s after the machine idled 100 ms against %s back to back (%s), while SHA-256 of 256 KiB took %s against %s (%s). What slows after idle is the system-call and large-footprint work every step of a call is made of (HTTP, API, engine, the controller's reads of /proc and the cgroup, the kernel's run), not the CPU's arithmetic.",
		ms(reads[0]), ms(reads[2]), ratio(reads[0], reads[2]), ms(hash[0]), ms(hash[2]), ratio(hash[0], hash[2]))
	rep.table(t)
	return nil
}

// paced runs call n times, gap apart, into s.
func paced(ctx context.Context, n int, gap time.Duration, s *series, call func(context.Context) error) error {
	for i := 0; i < n; i++ {
		if sleepCtx(ctx, gap); ctx.Err() != nil {
			return ctx.Err()
		}
		start := time.Now()
		if err := call(ctx); err != nil {
			s.fail(err)
			continue
		}
		s.add(time.Since(start))
	}
	return nil
}

// pacedWork is the p50 of task run n times, gap apart.
func pacedWork(ctx context.Context, n int, gap time.Duration, task func()) (time.Duration, error) {
	s := &series{}
	err := paced(ctx, n, gap, s, func(context.Context) error { task(); return nil })
	return s.pct(50), err
}

// procReads opens and reads /proc/self/stat 20 times: system calls, as the
// controller's readings are.
func procReads() {
	var b [512]byte
	for range 20 {
		if f, err := os.Open("/proc/self/stat"); err == nil {
			_, _ = f.Read(b[:])
			f.Close()
		}
	}
}

// hashWork returns a task hashing 256 KiB: arithmetic on a small footprint.
func hashWork() func() {
	buf := make([]byte, 256<<10)
	return func() {
		sum := sha256.Sum256(buf)
		buf[0] = sum[0] // the next round hashes other bytes
	}
}
