package batch

import (
	"context"
	"time"
)

// slotKeep is how long a runner goroutine keeps one owner slot across
// consecutive items before giving it back and contending again, so other
// batches of the same owner (on any replica) get their turn.
const slotKeep = 2 * time.Second

// slotLease is one runner goroutine's hold on an owner slot, kept across
// the items it runs back to back: taking and releasing a slot costs store
// writes (a create and a delete, each an fsync on the embedded store),
// which per item were two of five writes. The lease is given back after
// slotKeep, after a transient failure (the item backs off without holding
// a slot) and when the goroutine ends.
type slotLease struct {
	s       *slots
	owner   string
	release func()
	taken   time.Time
}

// newSlotLease returns an empty lease on owner's slots.
func newSlotLease(s *slots, owner string) *slotLease { return &slotLease{s: s, owner: owner} }

// ensure holds a slot, taking one (waiting while all are held) when none is
// held or the held one is older than slotKeep.
func (l *slotLease) ensure(ctx context.Context) error {
	if l.release != nil && time.Since(l.taken) < slotKeep {
		return nil
	}
	l.drop()
	release, err := l.s.acquire(ctx, l.owner)
	if err != nil {
		return err
	}
	l.release, l.taken = release, time.Now()
	return nil
}

// drop gives the held slot back, if any.
func (l *slotLease) drop() {
	if l.release != nil {
		l.release()
		l.release = nil
	}
}
