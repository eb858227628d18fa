package jobs

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/queue"
)

// laneQueue records the lane of every job submitted through it.
type laneQueue struct {
	queue.Queue
	mu    sync.Mutex
	lanes []queue.Lane
}

func (q *laneQueue) Do(ctx context.Context, j queue.Job) ([]byte, error) {
	q.mu.Lock()
	q.lanes = append(q.lanes, j.Lane)
	q.mu.Unlock()
	return q.Queue.Do(ctx, j)
}

// TestRequestLaneBecomesJobLane: a batch request waits in the queue's batch
// lane, an ordinary one in the interactive lane, and an unknown lane is
// refused as invalid without running.
func TestRequestLaneBecomesJobLane(t *testing.T) {
	mem, err := queue.NewMemory(queue.Config{}, queue.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	q := &laneQueue{Queue: mem}
	eng := &fakeEngine{fn: func(context.Context, core.Request) (core.Result, error) {
		return core.Result{Status: core.StatusOK}, nil
	}}
	c := stackOn(t, q, eng)
	ctx := context.Background()
	for _, l := range []core.Lane{core.LaneBatch, core.LaneInteractive} {
		if _, err := c.Exec(ctx, core.Request{Code: "x", Lane: l}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Exec(ctx, core.Request{Code: "x", Lane: "urgent"}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("unknown lane: %v, want core.ErrInvalid", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.lanes) != 3 || q.lanes[0] != queue.LaneBatch || q.lanes[1] != queue.LaneInteractive {
		t.Fatalf("job lanes %q", q.lanes)
	}
	if n := len(eng.seen); n != 2 {
		t.Fatalf("engine ran %d requests, want 2 (the unknown lane must not run)", n)
	}
}
