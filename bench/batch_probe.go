package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/client"
)

// probeSeries are the interactive print(1) latencies of one phase (idle
// or during the batch): per owner, paced and back-to-back.
type probeSeries struct {
	paced, b2b [2]*series // [0] the batch's owner, [1] another owner
	cycles     int
}

// newProbeSeries returns empty series.
func newProbeSeries() *probeSeries {
	p := &probeSeries{}
	for i := range 2 {
		p.paced[i], p.b2b[i] = &series{}, &series{}
	}
	return p
}

// printCall is a one-shot print(1) through POST /v1/tool-calls, checked.
func printCall(c *client.Client) func(context.Context) error {
	return func(ctx context.Context) error {
		res, err := c.RunPython(ctx, "print(1)")
		if err != nil {
			return err
		}
		if res.Result.Status != "ok" || res.Result.Stdout != "1\n" {
			return fmt.Errorf("status %s stdout %q stderr %q", res.Result.Status, res.Result.Stdout, clip(res.Result.Stderr))
		}
		return nil
	}
}

// probeCycle is one cycle of the interactive probe: five rounds at an
// agent's pace (each owner one call a second, half a second apart), then
// five back-to-back calls of each owner. It returns early once stop is
// set, finishing the call in flight.
func probeCycle(ctx context.Context, owners [2]*client.Client, p *probeSeries, stop *atomic.Bool) {
	for r := 0; r < 5; r++ {
		tick := time.Now()
		for i, c := range owners {
			if stop.Load() || ctx.Err() != nil {
				return
			}
			measure(ctx, p.paced[i], printCall(c))
			sleepCtx(ctx, time.Until(tick.Add(time.Duration(i+1)*500*time.Millisecond)))
		}
	}
	for i, c := range owners {
		for k := 0; k < 5; k++ {
			if stop.Load() || ctx.Err() != nil {
				return
			}
			measure(ctx, p.b2b[i], printCall(c))
		}
	}
	p.cycles++
}

// probeUntil runs probe cycles until stop is set and returns what they measured.
func probeUntil(ctx context.Context, owners [2]*client.Client, stop *atomic.Bool) *probeSeries {
	p := newProbeSeries()
	for !stop.Load() && ctx.Err() == nil {
		probeCycle(ctx, owners, p, stop)
	}
	return p
}

// probeCycles runs n probe cycles.
func probeCycles(ctx context.Context, owners [2]*client.Client, n int) *probeSeries {
	p := newProbeSeries()
	var never atomic.Bool
	for i := 0; i < n && ctx.Err() == nil; i++ {
		probeCycle(ctx, owners, p, &never)
	}
	return p
}
