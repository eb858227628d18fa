package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/docker/docker/api/types/container"
)

// unitPool is a pool over a fake daemon whose boxes are built by hand.
func unitPool(t *testing.T, mod func(*Config)) *pool {
	t.Helper()
	cfg := DefaultConfig()
	cfg.PoolSize, cfg.PoolMax = 1, 3
	if mod != nil {
		mod(&cfg)
	}
	e := New(cfg, &fakeDocker{}, nil)
	t.Cleanup(e.Settle)
	return newPool(e, poolKey{image: "img"}, e.cfg.PoolSize)
}

func handBox(id string, lim int64) *box {
	b := &box{id: id, created: time.Now(), life: time.Hour}
	b.limits.Memory = lim
	return b
}

func TestPoolOwnership(t *testing.T) {
	p := unitPool(t, nil)
	g1, g2 := handBox("g1", 1), handBox("g2", 1)
	p.generic = []*box{g1, g2}
	b, src := p.acquire("A", core.LaneInteractive, time.Second)
	if b != g1 || src != "generic" || b.owner != "A" {
		t.Fatalf("A got %v %s", b, src)
	}
	p.release(b, "A", core.LaneInteractive)
	if b, src = p.acquire("A", core.LaneInteractive, time.Second); b != g1 || src != "owner" {
		t.Fatalf("A's second call: %v %s", b, src)
	}
	p.release(b, "A", core.LaneInteractive)
	if b, src = p.acquire("B", core.LaneInteractive, time.Second); b != g2 || src != "generic" {
		t.Fatalf("B got %v %s, want the other generic", b, src)
	}
	p.release(b, "B", core.LaneInteractive)
	// A container of A released as B's (a bug elsewhere) is destroyed, not pooled.
	p.release(g1, "B", core.LaneInteractive)
	if !g1.dead.Load() {
		t.Fatal("a box released for the wrong owner was kept")
	}
	if b, src = p.acquire("C", core.LaneInteractive, time.Second); b != nil || src != "cold" {
		t.Fatalf("C got %v %s, want none (nothing generic left)", b, src)
	}
}

func TestPoolExpiryAndBudget(t *testing.T) {
	p := unitPool(t, func(c *Config) { c.OwnerIdle = time.Minute; c.WarmMemoryBudget = 2 })
	a := handBox("a", 1)
	a.owner = "A"
	p.release(a, "A", core.LaneInteractive)
	b := handBox("b", 1)
	b.owner = "A"
	p.release(b, "A", core.LaneInteractive)
	c := handBox("c", 1)
	c.owner = "A"
	p.release(c, "A", core.LaneInteractive) // over the 2-byte budget
	if !c.dead.Load() || a.dead.Load() || b.dead.Load() {
		t.Fatal("memory budget not applied")
	}
	p.expire(time.Now().Add(2 * time.Minute))
	p.e.Settle() // their room comes back once they are removed
	if !a.dead.Load() || !b.dead.Load() || len(p.owned) != 0 || p.e.warm.inUse() != 0 {
		t.Fatalf("idle owned boxes not expired: %v, warm %d", p.owned, p.e.warm.inUse())
	}
	old := handBox("old", 1)
	old.created = time.Now().Add(-time.Hour + 30*time.Second)
	p.generic = []*box{old}
	if got, _ := p.acquire("A", core.LaneInteractive, time.Second); got != nil || !old.dead.Load() {
		t.Fatal("a box near the end of its life was handed out")
	}
}

func TestPoolSingleUse(t *testing.T) {
	p := unitPool(t, func(c *Config) { c.SingleUse = true })
	g := handBox("g", 1)
	p.generic = []*box{g}
	b, _ := p.acquire("A", core.LaneInteractive, time.Second)
	p.release(b, "A", core.LaneInteractive)
	if !g.dead.Load() || len(p.owned) != 0 {
		t.Fatal("single-use box kept")
	}
}

func TestPoolTargetFollowsDemand(t *testing.T) {
	p := unitPool(t, func(c *Config) { c.PoolMax = 4 })
	now := time.Now()
	if n := p.target(now); n != 1 {
		t.Fatalf("idle target %d, want PoolSize 1", n)
	}
	for i := 0; i < 60; i++ { // one generic take a second, 2 s boots
		p.demand = append(p.demand, now.Add(-time.Duration(i)*time.Second/2))
	}
	if n := p.target(now); n != 3 {
		t.Fatalf("target under demand %d, want 1 + 1/s * 2 s = 3", n)
	}
	for i := 0; i < 600; i++ {
		p.demand = append(p.demand, now)
	}
	if n := p.target(now); n != 4 {
		t.Fatalf("target %d, want PoolMax 4", n)
	}
	if n := p.target(now.Add(2 * time.Minute)); n != 1 {
		t.Fatalf("target after demand left %d, want 1", n)
	}
}

// TestPoolLanes: an owner's batch-lane and interactive containers are kept
// in separate idle sets; a generic container taken by a batch call is the
// owner's batch container from then on and goes back to that set only.
func TestPoolLanes(t *testing.T) {
	p := unitPool(t, nil)
	g1, g2 := handBox("g1", 1), handBox("g2", 1)
	p.generic = []*box{g1, g2}
	bi, _ := p.acquire("A", core.LaneInteractive, time.Second)
	p.release(bi, "A", core.LaneInteractive)
	bb, src := p.acquire("A", core.LaneBatch, time.Second)
	if bb != g2 || src != "generic" || bb.owner != "A" || bb.lane != core.LaneBatch {
		t.Fatalf("A's batch call got %v %s; want the other generic, not A's idle interactive one", bb, src)
	}
	p.release(bb, "A", core.LaneBatch)
	if l := p.owned[laneKey{"A", core.LaneBatch}]; len(l) != 1 || l[0].b != g2 {
		t.Fatalf("batch idle set %v, want [g2]", l)
	}
	if l := p.owned[laneKey{"A", core.LaneInteractive}]; len(l) != 1 || l[0].b != g1 {
		t.Fatalf("interactive idle set %v, want [g1]", l)
	}
	if b, src := p.acquire("A", core.LaneBatch, time.Second); b != g2 || src != "owner" {
		t.Fatalf("A's second batch call got %v %s, want its batch container", b, src)
	}
	if b, src := p.acquire("A", core.LaneBatch, time.Second); b != nil || src != "cold" {
		t.Fatalf("A's concurrent batch call got %v %s, want none (its interactive container is not lent)", b, src)
	}
	if b, src := p.acquire("A", core.LaneInteractive, time.Second); b != g1 || src != "owner" {
		t.Fatalf("A's interactive call got %v %s, want its interactive container", b, src)
	}
	// A batch container released as interactive (a bug elsewhere) is destroyed, not pooled.
	p.release(g2, "A", core.LaneInteractive)
	if !g2.dead.Load() || len(p.owned[laneKey{"A", core.LaneInteractive}]) != 0 {
		t.Fatal("a batch container was put into the interactive idle set")
	}
	// Nor does it ever reach another owner's batch set.
	p.release(g1, "B", core.LaneBatch)
	if !g1.dead.Load() || len(p.owned) != 0 {
		t.Fatalf("A's container went to B's batch set: %v", p.owned)
	}
}

// TestSetSharesOnce: a box whose shares differ from the lane's gets one
// ContainerUpdate with exactly those shares; a box already at them, or an
// interactive call, gets none; a failed update leaves the box as it was
// (the next call tries again) and the call goes on.
func TestSetSharesOnce(t *testing.T) {
	var got []int64
	fail := false
	fd := &fakeDocker{update: func(id string, c container.UpdateConfig) error {
		if fail {
			return errors.New("daemon says no")
		}
		if c.Memory != 0 || c.NanoCPUs != 0 || c.PidsLimit != nil {
			t.Errorf("update touches more than cpu.shares: %+v", c.Resources)
		}
		got = append(got, c.CPUShares)
		return nil
	}}
	e := New(DefaultConfig(), fd, nil)
	t.Cleanup(e.Settle)
	ctx := context.Background()
	want := e.sharesFor(core.LaneBatch)
	if want != 2 || e.sharesFor(core.LaneInteractive) != 0 {
		t.Fatalf("shares: batch %d interactive %d, want 2 and 0", want, e.sharesFor(core.LaneInteractive))
	}
	b := handBox("g", 1)
	e.setShares(ctx, b, e.sharesFor(core.LaneInteractive))
	e.setShares(ctx, b, want)
	e.setShares(ctx, b, want)
	if len(got) != 1 || got[0] != 2 || b.shares != 2 {
		t.Fatalf("updates %v, box shares %d; want one update to 2", got, b.shares)
	}
	cold := handBox("c", 1)
	cold.shares = 2 // created with them
	e.setShares(ctx, cold, want)
	fail = true
	f := handBox("f", 1)
	e.setShares(ctx, f, want)
	if len(got) != 1 || f.shares != 0 || fd.called("update") != 2 {
		t.Fatalf("updates %v (%d calls), failed box shares %d", got, fd.called("update"), f.shares)
	}
	off := New(func() Config { c := DefaultConfig(); c.BatchCPUShares = 0; return c }(), fd, nil)
	t.Cleanup(off.Settle)
	if s := off.sharesFor(core.LaneBatch); s != 0 {
		t.Fatalf("BatchCPUShares 0: batch shares %d, want 0 (unchanged)", s)
	}
}

// TestPoolSpreadBackToBack: an owner's interactive call sent right after
// its previous one (the only idle container released under spareSettle
// ago) takes a generic container instead; from then on the owner's calls
// alternate between its two, the one idle longest first, and a third
// generic is never taken; a batch call never spreads; without a generic
// the just-released container is reused; while another of the owner's
// containers is on a call (concurrent clients) the just-released one is
// reused too; with OwnerSpread off (the DefaultConfig) the owner's one
// container serves every call.
func TestPoolSpreadBackToBack(t *testing.T) {
	p := unitPool(t, func(c *Config) { c.OwnerSpread = true })
	g1, g2, g3 := handBox("g1", 1), handBox("g2", 1), handBox("g3", 1)
	p.generic = []*box{g1, g2, g3}
	var got []string
	for range 5 {
		b, _ := p.acquire("A", core.LaneInteractive, time.Second)
		if b == nil {
			t.Fatal("no container")
		}
		got = append(got, b.id)
		p.release(b, "A", core.LaneInteractive)
	}
	if want := "g1 g2 g1 g2 g1"; fmt.Sprint(strings.Join(got, " ")) != want {
		t.Fatalf("back-to-back calls ran in %v, want %s", got, want)
	}
	if len(p.generic) != 1 || p.generic[0] != g3 {
		t.Fatalf("generic left %v, want only g3", p.generic)
	}
	b, _ := p.acquire("Z", core.LaneBatch, time.Second)
	p.release(b, "Z", core.LaneBatch)
	if b2, src := p.acquire("Z", core.LaneBatch, time.Second); b2 != b || src != "owner" {
		t.Fatalf("a batch call spread: %v %s", b2, src)
	}
	p2 := unitPool(t, func(c *Config) { c.OwnerSpread = true })
	h := handBox("h", 1)
	p2.generic = []*box{h}
	b, _ = p2.acquire("A", core.LaneInteractive, time.Second)
	p2.release(b, "A", core.LaneInteractive)
	if b2, src := p2.acquire("A", core.LaneInteractive, time.Second); b2 != h || src != "owner" {
		t.Fatalf("without a generic: %v %s", b2, src)
	}
	p4 := unitPool(t, func(c *Config) { c.OwnerSpread = true })
	c1, c2, c3 := handBox("c1", 1), handBox("c2", 1), handBox("c3", 1)
	p4.generic = []*box{c1, c2, c3}
	first, _ := p4.acquire("A", core.LaneInteractive, time.Second)
	second, _ := p4.acquire("A", core.LaneInteractive, time.Second)
	p4.release(second, "A", core.LaneInteractive)
	if b2, src := p4.acquire("A", core.LaneInteractive, time.Second); b2 != second || src != "owner" {
		t.Fatalf("a concurrent client's call spread: %v %s, want %s from the owner's", b2, src, second.id)
	}
	if len(p4.generic) != 1 || p4.busy[laneKey{"A", core.LaneInteractive}] != 2 {
		t.Fatalf("generic left %d, A busy %d; want 1 and 2", len(p4.generic), p4.busy[laneKey{"A", core.LaneInteractive}])
	}
	p4.release(first, "A", core.LaneInteractive)
	p4.discard(second)
	if len(p4.busy) != 0 || p4.out != 0 {
		t.Fatalf("after every container came back: busy %v, out %d", p4.busy, p4.out)
	}
	p3 := unitPool(t, nil)
	k1, k2 := handBox("k1", 1), handBox("k2", 1)
	p3.generic = []*box{k1, k2}
	for i := range 3 {
		b, _ := p3.acquire("A", core.LaneInteractive, time.Second)
		if b != k1 {
			t.Fatalf("spread off, call %d ran in %v, want k1", i, b)
		}
		p3.release(b, "A", core.LaneInteractive)
	}
}

// TestPoolBudgetKeepsHotContainers: a container coming back from a call
// over the warm memory budget pushes out a generic container above
// PoolSize rather than being destroyed itself (a batch kept replacing its
// containers that way), the budget still holds when only PoolSize generic
// ones are left, and the demand-driven target does not boot generic
// containers that the ones out on calls would push out on their return.
func TestPoolBudgetKeepsHotContainers(t *testing.T) {
	p := unitPool(t, func(c *Config) { c.PoolSize, c.PoolMax, c.WarmMemoryBudget = 1, 4, 4 })
	p.limits.Memory = 1
	g1, g2, g3 := handBox("g1", 1), handBox("g2", 1), handBox("g3", 1)
	p.generic = []*box{g1, g2, g3}
	p.e.warm.take(3)
	ia := handBox("ia", 1)
	ia.owner, ia.lane = "B", core.LaneInteractive
	p.release(ia, "B", core.LaneInteractive) // 4 of 4
	b1, _ := p.acquire("A", core.LaneBatch, time.Second)
	b2, _ := p.acquire("A", core.LaneBatch, time.Second)
	if b1 != g1 || b2 != g2 || p.out != 2 {
		t.Fatalf("batch took %v %v, out %d", b1, b2, p.out)
	}
	for i := 0; i < 600; i++ { // heavy generic demand: PoolMax without the budget
		p.demand = append(p.demand, time.Now())
	}
	// 2 of 4 idle, 2 out: nothing to boot, the two out need the room.
	if n := p.target(time.Now()); n != 1 {
		t.Fatalf("target %d with 2 containers out and 2 units free, want 1 (what is there)", n)
	}
	g4 := handBox("g4", 1) // booted anyway (e.g. before the batch took its containers)
	p.generic = append(p.generic, g4)
	p.e.warm.take(1) // 3 of 4
	p.release(b1, "A", core.LaneBatch)
	if b1.dead.Load() || g4.dead.Load() || p.e.warm.inUse() != 4 {
		t.Fatalf("b1 back within the budget: b1 dead %v, g4 dead %v, warm %d", b1.dead.Load(), g4.dead.Load(), p.e.warm.inUse())
	}
	p.release(b2, "A", core.LaneBatch) // over: g4 (above PoolSize) goes, b2 stays
	if b2.dead.Load() || !g4.dead.Load() || len(p.generic) != 1 || p.generic[0] != g3 || p.e.warm.inUse() != 4 {
		t.Fatalf("b2 dead %v, g4 dead %v, generic %v, warm %d: want b2 kept, g4 let go", b2.dead.Load(), g4.dead.Load(), p.generic, p.e.warm.inUse())
	}
	p.e.Settle() // g4 is gone: b2 is idle in its room
	if n := len(p.owned[laneKey{"A", core.LaneBatch}]); n != 2 || p.e.warm.inUse() != 4 {
		t.Fatalf("A's idle batch containers %d, warm %d: want b1 and b2 in g4's room", n, p.e.warm.inUse())
	}
	b3, _ := p.acquire("A", core.LaneBatch, time.Second)
	c := handBox("cold", 1) // a cold box of A's batch coming back: the generic at PoolSize stays
	c.owner, c.lane = "A", core.LaneBatch
	p.release(b3, "A", core.LaneBatch)
	p.release(c, "A", core.LaneBatch)
	if !c.dead.Load() || g3.dead.Load() || p.out != 0 || p.e.warm.inUse() != 4 {
		t.Fatalf("cold dead %v, g3 dead %v, out %d, warm %d: want the budget kept by destroying the returning box", c.dead.Load(), g3.dead.Load(), p.out, p.e.warm.inUse())
	}
	if n := p.target(time.Now()); n != 1 {
		t.Fatalf("target %d with the budget full, want PoolSize 1", n)
	}
}

// TestPoolReplacesBareWithPreloaded: a container booted cold (bare: without
// the image's preload, so every kernel imports pandas again) serves its
// owner only while no generic, preloaded container is free; then the owner
// gets the generic one and the bare one goes.
func TestPoolReplacesBareWithPreloaded(t *testing.T) {
	p := unitPool(t, nil)
	bare := handBox("bare", 1)
	bare.bare, bare.owner, bare.lane = true, "A", core.LaneInteractive
	p.release(bare, "A", core.LaneInteractive)
	// No generic container: the bare one is still better than a cold start.
	b, src := p.acquire("A", core.LaneInteractive, time.Second)
	if b != bare || src != "owner" {
		t.Fatalf("A with no generic free got %v %s, want its bare container", b, src)
	}
	p.release(b, "A", core.LaneInteractive)
	g := handBox("g", 1)
	p.e.warm.take(1) // a generic container holds its room, as a boot's does
	p.generic = []*box{g}
	if b, src = p.acquire("A", core.LaneInteractive, time.Second); b != g || src != "generic" {
		t.Fatalf("A with a generic free got %v %s, want the generic", b, src)
	}
	if !bare.dead.Load() || len(p.owned) != 0 {
		t.Fatalf("the bare container was kept beside the preloaded one: dead %v, owned %v", bare.dead.Load(), p.owned)
	}
	p.release(b, "A", core.LaneInteractive)
	// A preloaded idle container is the owner's own again: no generic taken.
	g2 := handBox("g2", 1)
	p.e.warm.take(1)
	p.generic = []*box{g2}
	if b, src = p.acquire("A", core.LaneInteractive, time.Second); b != g || src != "owner" {
		t.Fatalf("A's preloaded container: got %v %s", b, src)
	}
	p.release(b, "A", core.LaneInteractive)
	p.e.Settle()
	if p.e.warm.inUse() != 2 {
		t.Fatalf("warm memory in use %d, want 2 (A's idle container and g2; the bare one's room given back)", p.e.warm.inUse())
	}
}
