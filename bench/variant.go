package main

import (
	"context"
	"time"
)

// variant is one way of running the same work, measured in turn with the others.
type variant struct {
	s    *series
	run  func(ctx context.Context) error
	peak int64 // largest RSS a run reported (client processes)
}

// interleave runs every variant n times, rotating the order each round and
// calling wait (a quiet machine, refilled pools) before each measured call.
func interleave(ctx context.Context, q *quieter, n int, vs []*variant, wait func(context.Context) error) error {
	for i := 0; i < n; i++ {
		for k := range vs {
			v := vs[(i+k)%len(vs)]
			if err := wait(ctx); err != nil {
				return err
			}
			t := time.Now()
			err := v.run(ctx)
			d := time.Since(t)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				v.s.fail(err)
			} else {
				v.s.add(d)
			}
		}
		if (i+1)%10 == 0 {
			logf("  %d/%d rounds", i+1, n)
		}
	}
	return nil
}
