package sandbox

import "time"

// Admission (issue 33): a new owner's first call should find a generic
// warm container even when the memory budget is full of other owners' idle
// ones. The fill keeps PoolSize generic containers ahead of anyone's idle
// container: when the budget has no room for one it evicts the owned
// container idle the longest (this pool's first, then the engine's other
// pools'), one at a time, and boots the generic one into its room once it
// is gone. An evicted owner's next call takes a generic container or boots
// one, as after OwnerIdle.

// roomForGeneric takes room in the warm budget for one more generic
// container of p, which holds have. Without room, and with fewer than
// PoolSize generic containers, it starts evicting the longest-idle owned
// container and returns false: the fill is kicked when the room is back.
func (p *pool) roomForGeneric(have int) bool {
	if p.e.warm.take(p.limits.Memory) {
		return true
	}
	if have < p.e.cfg.PoolSize {
		p.e.evictIdleOwned(p)
	}
	return false
}

// evictIdleOwned removes the owned idle container idle the longest, of
// first or else of the engine's other pools, unless an eviction for first
// is still under way; its room returns to the budget once it is gone, and
// first's fill is kicked then. It holds one pool's lock at a time.
func (e *Engine) evictIdleOwned(first *pool) {
	first.mu.Lock()
	if first.evicting {
		first.mu.Unlock()
		return
	}
	first.evicting = true
	first.mu.Unlock()
	for _, q := range e.poolsFrom(first) {
		if b := q.takeOldestIdle(); b != nil {
			e.log.Debug("warm container evicted for a generic one", "container", short(b.id), "owner", b.owner)
			e.destroy(b.id, b.conn, func() {
				e.warm.give(b.limits.Memory)
				first.mu.Lock()
				first.evicting = false
				first.mu.Unlock()
				first.kick()
			})
			return
		}
	}
	first.mu.Lock()
	first.evicting = false
	first.mu.Unlock()
}

// takeOldestIdle takes the owned idle container idle the longest out of
// its idle set and marks it dead, or returns nil when there is none.
func (p *pool) takeOldestIdle() *box {
	p.mu.Lock()
	defer p.mu.Unlock()
	var (
		oldK  laneKey
		oldI  = -1
		since time.Time
	)
	for k, list := range p.owned {
		for i, ib := range list {
			if oldI < 0 || ib.since.Before(since) {
				oldK, oldI, since = k, i, ib.since
			}
		}
	}
	if oldI < 0 {
		return nil
	}
	list := p.owned[oldK]
	b := list[oldI].b
	p.setOwned(oldK, append(list[:oldI:oldI], list[oldI+1:]...))
	p.publishLocked()
	b.dead.Store(true)
	return b
}
