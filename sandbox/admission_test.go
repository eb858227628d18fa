package sandbox

import (
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// TestAdmissionEvictsLongestIdle: with the warm budget full of owners'
// idle containers and no generic one, the fill's room check evicts the
// owned container idle the longest (one at a time) and, once it is gone,
// finds room for a generic container; the others stay.
func TestAdmissionEvictsLongestIdle(t *testing.T) {
	p := unitPool(t, func(c *Config) { c.PoolSize = 1; c.WarmMemoryBudget = 3 })
	p.limits.Memory = 1
	var boxes []*box
	for i, o := range []string{"A", "B", "C"} {
		b := handBox(o, 1)
		b.owner, b.lane = o, core.LaneInteractive
		p.release(b, o, core.LaneInteractive)
		p.owned[laneKey{o, core.LaneInteractive}][0].since = time.Now().Add(time.Duration(i-10) * time.Second)
		boxes = append(boxes, b)
	}
	if p.roomForGeneric(0) {
		t.Fatal("room found in a full budget")
	}
	p.e.Settle()
	if !boxes[0].dead.Load() || boxes[1].dead.Load() || boxes[2].dead.Load() {
		t.Fatalf("evicted A %v B %v C %v; want only A (idle longest)", boxes[0].dead.Load(), boxes[1].dead.Load(), boxes[2].dead.Load())
	}
	if _, ok := p.owned[laneKey{"A", core.LaneInteractive}]; ok {
		t.Fatal("the evicted container is still in A's idle set")
	}
	select {
	case <-p.wake:
	default:
		t.Fatal("the fill was not kicked when the room came back")
	}
	if !p.roomForGeneric(0) {
		t.Fatalf("no room after the eviction: warm %d of %d", p.e.warm.inUse(), p.e.warm.limit)
	}
	// With PoolSize generic containers already there, nobody is evicted.
	if p.roomForGeneric(1) {
		t.Fatal("room found in a full budget")
	}
	p.e.Settle()
	if boxes[1].dead.Load() || boxes[2].dead.Load() {
		t.Fatal("an owned container was evicted although the pool had its generic ones")
	}
}
