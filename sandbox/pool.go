package sandbox

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/egress"
)

// pool keeps the warm containers of one controller image: idle generic
// ones (controller ready, zygote preloaded, a spare kernel forked, never
// used) and idle owned ones (each has served exactly one owner and only
// ever serves that owner again). Owned containers are also kept per lane:
// a container that served an owner's batch-lane call runs at low CPU
// priority (Config.BatchCPUShares) and only ever serves that owner's batch
// calls, so the owner's interactive containers are never busy with, or
// throttled for, the batch. A one-shot call takes one of its owner's idle
// containers of its lane, else a generic one (which becomes the owner's,
// in that lane), else boots one. After the call the controller has killed
// the call's processes and emptied /work and /tmp, and the container goes
// back to its idle set until OwnerIdle passes.
type pool struct {
	e     *Engine
	key   poolKey
	image string
	// egress is the policy of every container of the pool (its doors
	// serve it); zero for a pool without network.
	egress egress.Policy
	// base is the least number of generic containers kept: PoolSize for
	// a built-in image, 0 for an environment's, whose pool boots
	// containers only on demand and goes away when unused (an
	// environment nobody uses costs nothing while idle).
	base    int
	imageID string
	limits  core.Limits
	mu      sync.Mutex
	generic []*box
	owned   map[laneKey][]idleBox // owner and lane -> idle containers, most recent last
	demand  []time.Time           // recent generic takes and cold misses
	out     int                   // one-shot containers handed out by acquire, not yet back
	busy    map[laneKey]int       // of those, how many each owner has, per lane
	bootEst time.Duration         // running estimate of a boot's wall time
	wake    chan struct{}         // kicks fill: a generic container was taken
	idled   chan struct{}         // kicks expiry: a container went idle
	stop    chan struct{}
	closed  bool
	used    time.Time // last handout or return (dropUnused)
	// evicting is set while an owned container is being removed to make
	// room for a generic one (admission.go).
	evicting bool
}

// laneKey names one idle set of owned containers: an owner's, of one lane.
type laneKey struct {
	owner string
	lane  core.Lane
}

// idleBox is an owned container waiting for its owner's next call.
type idleBox struct {
	b     *box
	since time.Time
}

// Ages: a generic container is replaced after recycleAfter; no container is
// handed out within handoutMargin (plus the call's timeout) of its life.
const (
	recycleAfter  = 30 * time.Minute
	handoutMargin = time.Minute
	demandWindow  = time.Minute
)

// poolLife is how long a pooled container's controller lives: long enough
// to become a session.
func (e *Engine) poolLife() time.Duration { return e.cfg.SessionMaxLife + 10*time.Minute }

// poolFor returns the pool of key, starting it (keeping at least base
// generic containers) on first use.
func (e *Engine) poolFor(key poolKey, base int) *pool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.poolForLocked(key, base)
}

// poolForLocked is poolFor with e.mu held.
func (e *Engine) poolForLocked(key poolKey, base int) *pool {
	return e.policyPoolLocked(key, base, egress.Policy{})
}

// policyPoolLocked is poolForLocked for a pool whose containers get pol
// (key.egress is its hash); e.mu is held.
func (e *Engine) policyPoolLocked(key poolKey, base int, pol egress.Policy) *pool {
	if p, ok := e.pools[key]; ok {
		return p
	}
	p := newPool(e, key, base)
	p.egress = pol
	e.pools[key] = p
	e.goBackground(p.fill)
	e.goBackground(p.expiry)
	return p
}

// newPool makes the (not yet running) pool of key.
func newPool(e *Engine, key poolKey, base int) *pool {
	return &pool{e: e, key: key, image: key.image, base: base, limits: e.cfg.Defaults, owned: map[laneKey][]idleBox{}, busy: map[laneKey]int{}, bootEst: 2 * time.Second, used: time.Now(),
		wake: make(chan struct{}, 1), idled: make(chan struct{}, 1), stop: make(chan struct{})}
}

// poolOf returns the pool that may serve c, or nil: pooled containers carry
// the pool's limits (an input folder is copied in per call, like an
// archive). An environment's pool starts on its first call, with no
// generic baseline: that call pays one container start. So does the pool
// of an image and an egress policy (issue 29): its containers have a door
// serving that policy, and the owner's next call with the same policy
// takes the one its first call left idle, under the same memory budget.
func (e *Engine) poolOf(c checked) *pool {
	if e.cfg.PoolSize <= 0 {
		return nil
	}
	key := poolKey{image: c.image}
	if !c.egress.Empty() {
		key.egress = c.egress.Hash()
	}
	e.mu.Lock()
	p := e.pools[key]
	if p == nil && (e.isEnvImage(c.image) || key.egress != "") {
		select {
		case <-e.stop:
		default:
			p = e.policyPoolLocked(key, 0, c.egress)
		}
	}
	e.mu.Unlock()
	if p == nil || !sameContainerLimits(p.limits, c.limits) || !p.egress.Equal(c.egress) {
		return nil
	}
	return p
}

// label names the pool in metrics and logs: its image, and the hash of its
// egress policy when it has one.
func (p *pool) label() string {
	if p.key.egress == "" {
		return p.image
	}
	return p.image + " egress:" + p.key.egress
}

// sameContainerLimits compares the limits fixed at container creation.
// Timeout and output caps are enforced per call, so they may differ.
func sameContainerLimits(a, b core.Limits) bool {
	return a.Memory == b.Memory && a.CPUs == b.CPUs && a.Pids == b.Pids &&
		a.TmpfsBytes == b.TmpfsBytes && a.NoFile == b.NoFile && a.FileSize == b.FileSize
}

// fresh reports whether b may still take a call of timeout.
func (b *box) fresh(timeout time.Duration) bool {
	return !b.dead.Load() && time.Since(b.created)+timeout+handoutMargin < b.life
}

// acquire hands out owner's idle container of lane, else a generic one
// (now owner's, in lane). It returns nil when neither exists; source says
// which.
func (p *pool) acquire(owner string, lane core.Lane, timeout time.Duration) (*box, string) {
	defer p.kick()
	p.mu.Lock()
	defer p.mu.Unlock()
	b, source := p.acquireLocked(owner, lane, timeout)
	p.used = time.Now()
	if b != nil {
		b.out = true
		p.out++
		p.busy[laneKey{b.owner, b.lane}]++
		p.e.outMem.Add(b.limits.Memory)
	}
	p.publishLocked()
	return b, source
}

// acquireLocked is acquire with p.mu held.
func (p *pool) acquireLocked(owner string, lane core.Lane, timeout time.Duration) (*box, string) {
	if !p.e.cfg.SingleUse {
		k := laneKey{owner, lane}
		list := p.owned[k]
		if allBare(list) && len(p.generic) > 0 {
			// The owner's only idle containers were booted cold, without the
			// image's preload: a generic one (preloaded) replaces them, so
			// numpy, pandas and matplotlib are not imported again in every call.
			if b := p.takeGenericLocked(owner, lane, timeout); b != nil {
				for _, ib := range list {
					p.e.retireWarm(ib.b)
				}
				p.setOwned(k, nil)
				return b, "generic"
			}
		}
		if p.spread(k, list) {
			if b := p.takeGenericLocked(owner, lane, timeout); b != nil {
				return b, "generic"
			}
		}
		for len(list) > 0 {
			var ib idleBox
			if lane == core.LaneInteractive {
				// The one idle longest: its next spare kernel has had the most time
				// to be forked and set up (a call sent at once waits for that).
				ib, list = list[0], list[1:]
			} else {
				ib, list = list[len(list)-1], list[:len(list)-1]
			}
			if ib.b.fresh(timeout) {
				p.e.warm.give(ib.b.limits.Memory)
				p.setOwned(k, list)
				return ib.b, "owner"
			}
			p.e.retireWarm(ib.b)
		}
		p.setOwned(k, list)
	}
	if b := p.takeGenericLocked(owner, lane, timeout); b != nil {
		return b, "generic"
	}
	return nil, "cold"
}

// allBare reports whether list holds containers and every one is bare.
func allBare(list []idleBox) bool {
	for _, ib := range list {
		if !ib.b.bare {
			return false
		}
	}
	return len(list) > 0
}

// spareSettle is how long a one-shot container needs after a call before
// its next spare kernel is ready (forked from the zygote and set up: 30-60
// ms on 2 cores); a call sent sooner waits for it.
const spareSettle = 100 * time.Millisecond

// spread reports whether (Config.OwnerSpread) an owner's interactive call should take a generic
// container rather than its only idle one, released under spareSettle ago
// while none other of the owner's is on a call: an agent calling back to
// back then alternates between two containers, each call finding a spare
// kernel ready, instead of waiting for one. It never grows an owner past
// two containers by itself (with two idle, the older is taken; with one
// busy, the owner's clients are concurrent and each already has its own,
// so a third would only cost a pool boot), and never applies to batch
// calls, which run no kernel when they are shell calls and go by
// throughput.
func (p *pool) spread(k laneKey, list []idleBox) bool {
	return p.e.cfg.OwnerSpread && k.lane == core.LaneInteractive && len(list) == 1 && p.busy[k] == 0 &&
		time.Since(list[0].since) < spareSettle && len(p.generic) > 0 && p.e.warm.free() >= 2*p.limits.Memory
}

// takeGenericLocked hands out a fresh generic container, now owner's for
// lane, or nil; p.mu is held.
func (p *pool) takeGenericLocked(owner string, lane core.Lane, timeout time.Duration) *box {
	p.demand = append(p.demand, time.Now())
	for len(p.generic) > 0 {
		b := p.generic[0]
		p.generic = p.generic[1:]
		if b.fresh(timeout) {
			p.e.warm.give(b.limits.Memory)
			b.owner, b.lane = owner, lane
			// Labels cannot change after creation: log who took which container.
			p.e.log.Debug("warm container taken", "container", short(b.id), "owner", owner, "lane", string(lane))
			return b
		}
		p.e.retireWarm(b)
	}
	return nil
}

// takeGeneric hands out a generic container only (for a session).
func (p *pool) takeGeneric(owner string, life time.Duration) *box {
	defer p.kick()
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.publishLocked()
	p.used = time.Now()
	return p.takeGenericLocked(owner, core.LaneInteractive, life)
}

func (p *pool) setOwned(k laneKey, list []idleBox) {
	if len(list) == 0 {
		delete(p.owned, k)
	} else {
		p.owned[k] = list
	}
}

// release returns a container that served owner's call of lane to that
// idle set, or destroys it (single-use mode, dead, closing, not owner's
// container of lane, or over the memory budget with no generic container
// above PoolSize in any pool to make way: a container that just served a
// call is likelier to serve again soon than a surplus generic one).
func (p *pool) release(b *box, owner string, lane core.Lane) {
	k := laneKey{owner, lane}
	p.mu.Lock()
	p.back(b)
	p.used = time.Now()
	switch {
	case p.closed || p.e.cfg.SingleUse || b.dead.Load() || b.owner != owner || b.lane != lane:
		p.e.retire(b)
		p.mu.Unlock()
		return
	case p.e.warm.take(b.limits.Memory):
		p.idleLocked(k, b)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	// A surplus generic container makes way: its room passes to b once it
	// is gone (until then it still holds its memory).
	g := p.e.surplusGeneric(p)
	if g == nil {
		p.e.retire(b)
		return
	}
	p.e.destroy(g.id, g.conn, func() { p.adopt(k, b, g.limits.Memory) })
}

// poolsFrom returns first, then the engine's other pools.
func (e *Engine) poolsFrom(first *pool) []*pool {
	pools := []*pool{first}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, q := range e.pools {
		if q != first {
			pools = append(pools, q)
		}
	}
	return pools
}

// surplusGeneric takes a generic container above PoolSize out of a pool
// (first's first, then the engine's others) and marks it dead, or returns
// nil. It holds one pool's lock at a time.
func (e *Engine) surplusGeneric(first *pool) *box {
	for _, q := range e.poolsFrom(first) {
		q.mu.Lock()
		if n := len(q.generic); n > q.base {
			g := q.generic[n-1]
			q.generic = q.generic[:n-1]
			q.publishLocked()
			q.mu.Unlock()
			g.dead.Store(true)
			return g
		}
		q.mu.Unlock()
	}
	return nil
}

// adopt makes b idle in the set k with the room (bytes) of a generic
// container that made way for it and is now gone; b is let go instead
// when the pool closed or b died meanwhile.
func (p *pool) adopt(k laneKey, b *box, room int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || b.dead.Load() {
		p.e.warm.give(room)
		p.e.retire(b)
		return
	}
	if !p.e.warm.exchange(room, b.limits.Memory) { // the room is given back
		p.e.retire(b)
		return
	}
	p.idleLocked(k, b)
}

// idleLocked adds b, whose room is taken, to the idle set k; p.mu is held.
func (p *pool) idleLocked(k laneKey, b *box) {
	p.owned[k] = append(p.owned[k], idleBox{b: b, since: time.Now()})
	p.publishLocked()
	select {
	case p.idled <- struct{}{}:
	default:
	}
}

// discard destroys a container a call could not give back clean.
func (p *pool) discard(b *box) {
	p.mu.Lock()
	p.back(b)
	p.mu.Unlock()
	p.e.retire(b)
}

// back counts b as no longer out on a call; p.mu is held.
func (p *pool) back(b *box) {
	if b.out {
		b.out = false
		p.out--
		k := laneKey{b.owner, b.lane}
		if p.busy[k]--; p.busy[k] <= 0 {
			delete(p.busy, k)
		}
		p.e.outMem.Add(-b.limits.Memory)
	}
}

func (p *pool) kick() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// target is how many generic containers to keep: PoolSize plus the
// generic demand expected while one container boots (takes per second over
// the last minute times the boot time), within PoolMax. Past PoolSize a
// generic container is only worth booting when the memory budget also
// holds the containers out on calls (of every pool: the budget is the
// engine's), which come back to their idle sets: otherwise their return
// would evict it again (release), and a batch would keep the pool booting
// containers it then throws away.
func (p *pool) target(now time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.key.egress != "" {
		// A policy's pool keeps only what its calls left idle: a policy
		// is most often one key's, and a generic container booted ahead
		// for it would evict other owners' warm ones from the budget.
		return 0
	}
	cut := 0
	for cut < len(p.demand) && now.Sub(p.demand[cut]) > demandWindow {
		cut++
	}
	p.demand = p.demand[cut:]
	rate := float64(len(p.demand)) / demandWindow.Seconds()
	if p.base == 0 && len(p.demand) < 2 {
		// An environment's pool: one owner's first call is not demand
		// for a container nobody asked for yet.
		rate = 0
	}
	t := p.base + int(math.Ceil(rate*p.bootEst.Seconds()))
	t = min(max(t, p.base), p.e.cfg.PoolMax)
	if t > p.base && len(p.generic) >= p.base {
		room := (p.e.warm.free() - p.e.outMem.Load()) / max(p.limits.Memory, 1)
		t = min(t, len(p.generic)+max(0, int(room)))
		t = max(t, p.base)
	}
	return t
}

// fill keeps the generic set at its target (one boot at a time: on two
// cores parallel boots did not raise throughput) and drains the pool when
// its image tag moves to a new image. A boot takes its room in the memory
// budget before it starts; the container keeps it once it is idle.
func (p *pool) fill() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	backoff := time.Second
	checked := time.Now()
	for {
		now := time.Now()
		if now.Sub(checked) > 15*time.Second {
			checked = now
			if p.imageChanged() {
				p.flush()
			}
		}
		if p.base == 0 && p.e.dropUnused(p, now) {
			return
		}
		p.mu.Lock()
		have := len(p.generic)
		p.mu.Unlock()
		if have < p.target(now) && p.roomForGeneric(have) {
			err := p.startOne()
			if err == nil {
				backoff = time.Second
				continue
			}
			p.e.log.Warn("warm pool: start failed", "image", p.label(), "err", err)
			select {
			case <-p.stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Minute)
			continue
		}
		select {
		case <-p.stop:
			return
		case <-p.wake:
		case <-tick.C:
		}
	}
}

// expiry runs expire on its own schedule: at the next container's due
// time (and at least every second, for dead ones), woken early when one
// goes idle, so neither a boot in progress (minutes on a busy host) nor a
// boot's backoff holds it up.
func (p *pool) expiry() {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-p.idled:
		case <-t.C:
		}
		next := p.expire(time.Now())
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(min(time.Until(next), time.Second))
	}
}

// expire destroys owned containers idle for OwnerIdle and generic ones
// past recycleAfter, and returns when the next one is due.
func (p *pool) expire(now time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := now.Add(recycleAfter)
	for k, list := range p.owned {
		keep := list[:0]
		for _, ib := range list {
			due := ib.since.Add(p.e.cfg.OwnerIdle)
			if !now.Before(due) || ib.b.dead.Load() {
				p.e.retireWarm(ib.b)
				continue
			}
			next = minTime(next, due)
			keep = append(keep, ib)
		}
		p.setOwned(k, keep)
	}
	keep := p.generic[:0]
	for _, b := range p.generic {
		due := b.created.Add(recycleAfter)
		if p.base == 0 { // an environment's pool keeps no container nobody took
			due = minTime(due, b.created.Add(p.e.cfg.OwnerIdle))
		}
		if !now.Before(due) || b.dead.Load() {
			p.e.retireWarm(b)
			continue
		}
		next = minTime(next, due)
		keep = append(keep, b)
	}
	p.generic = keep
	p.publishLocked()
	return next
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// publishLocked sets the idle-container gauges from the idle sets; p.mu is held.
func (p *pool) publishLocked() {
	owned, batch := 0, 0
	for k, l := range p.owned {
		if k.lane == core.LaneBatch {
			batch += len(l)
		} else {
			owned += len(l)
		}
	}
	p.e.metrics.idle.WithLabelValues(p.label(), "generic").Set(float64(len(p.generic)))
	p.e.metrics.idle.WithLabelValues(p.label(), "owned").Set(float64(owned))
	p.e.metrics.idle.WithLabelValues(p.label(), "batch").Set(float64(batch))
}

// startOne boots a generic container, at poolBootShares until it is
// ready, and adds it to the pool. The caller
// has taken its room in the memory budget: the container keeps it, or it
// is given back when the boot fails or the pool is closing.
func (p *pool) startOne() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() { // drain cancels a boot in progress
		select {
		case <-p.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	start := time.Now()
	b, err := p.e.startBox(ctx, p.image, p.limits, "pool", "", "", true, p.e.poolLife(), poolBootShares, p.egress)
	if err != nil {
		p.e.warm.give(p.limits.Memory)
		return err
	}
	p.e.setShares(ctx, b, defaultShares)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bootEst = (3*p.bootEst + time.Since(start)) / 4
	if p.closed {
		p.e.retireWarm(b)
		return nil
	}
	p.generic = append(p.generic, b)
	p.publishLocked()
	return nil
}

// imageChanged reports whether the pool's tag now names another image.
func (p *pool) imageChanged() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := p.e.docker.ImageInspect(ctx, p.image)
	if err != nil {
		return false
	}
	if p.imageID == "" {
		p.imageID = info.ID
		return false
	}
	if info.ID != p.imageID {
		p.e.log.Info("warm pool: image changed, draining", "image", p.image)
		p.imageID = info.ID
		return true
	}
	return false
}

// flush destroys every idle container.
func (p *pool) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.generic {
		p.e.retireWarm(b)
	}
	p.generic = nil
	for k, list := range p.owned {
		for _, ib := range list {
			p.e.retireWarm(ib.b)
		}
		delete(p.owned, k)
	}
	p.publishLocked()
}

// drain stops refilling and destroys the idle containers.
func (p *pool) drain() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	close(p.stop)
	p.flush()
}

// retire removes a container off the caller's path (the forced removal
// kills it; closing the attach already makes its controller exit).
func (e *Engine) retire(b *box) {
	b.dead.Store(true)
	e.destroy(b.id, b.conn, nil)
}

// retireWarm removes a warm container that holds room in the memory
// budget, and gives the room back only once the container is gone: until
// then it still holds its memory, and a container booted into its room
// would take the warm containers past the budget.
func (e *Engine) retireWarm(b *box) {
	b.dead.Store(true)
	e.destroy(b.id, b.conn, func() { e.warm.give(b.limits.Memory) })
}

// WaitWarm blocks until every pool has at least one generic container (or
// ctx ends). Without pools it returns at once.
func (e *Engine) WaitWarm(ctx context.Context) error {
	for {
		e.mu.Lock()
		cold := false
		for _, p := range e.pools {
			p.mu.Lock()
			if len(p.generic) == 0 && p.base > 0 {
				cold = true
			}
			p.mu.Unlock()
		}
		e.mu.Unlock()
		if !cold {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sandbox: waiting for the warm pool: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// dropUnused closes an environment's pool (base 0) that holds no
// container, has none out on a call and saw no demand for OwnerIdle: its
// goroutines and gauges go too. A later call starts it again.
func (e *Engine) dropUnused(p *pool, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	p.mu.Lock()
	unused := !p.closed && len(p.generic) == 0 && len(p.owned) == 0 && p.out == 0 &&
		now.Sub(p.used) > e.cfg.OwnerIdle
	if unused {
		p.closed = true
	}
	p.mu.Unlock()
	if !unused {
		return false
	}
	if e.pools[p.key] == p {
		delete(e.pools, p.key)
	}
	close(p.stop)
	for _, kind := range []string{"generic", "owned", "batch"} {
		e.metrics.idle.DeleteLabelValues(p.label(), kind)
	}
	return true
}
