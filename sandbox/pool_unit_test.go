package sandbox

import (
	"testing"
	"time"
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
	return &pool{e: e, image: "img", limits: e.cfg.Defaults, owned: map[string][]idleBox{}, bootEst: 2 * time.Second}
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
	b, src := p.acquire("A", time.Second)
	if b != g1 || src != "generic" || b.owner != "A" {
		t.Fatalf("A got %v %s", b, src)
	}
	p.release(b, "A")
	if b, src = p.acquire("A", time.Second); b != g1 || src != "owner" {
		t.Fatalf("A's second call: %v %s", b, src)
	}
	p.release(b, "A")
	if b, src = p.acquire("B", time.Second); b != g2 || src != "generic" {
		t.Fatalf("B got %v %s, want the other generic", b, src)
	}
	p.release(b, "B")
	// A container of A released as B's (a bug elsewhere) is destroyed, not pooled.
	p.release(g1, "B")
	if !g1.dead.Load() {
		t.Fatal("a box released for the wrong owner was kept")
	}
	if b, src = p.acquire("C", time.Second); b != nil || src != "cold" {
		t.Fatalf("C got %v %s, want none (nothing generic left)", b, src)
	}
}

func TestPoolExpiryAndBudget(t *testing.T) {
	p := unitPool(t, func(c *Config) { c.OwnerIdle = time.Minute; c.WarmMemoryBudget = 2 })
	a := handBox("a", 1)
	a.owner = "A"
	p.release(a, "A")
	b := handBox("b", 1)
	b.owner = "A"
	p.release(b, "A")
	c := handBox("c", 1)
	c.owner = "A"
	p.release(c, "A") // over the 2-byte budget
	if !c.dead.Load() || a.dead.Load() || b.dead.Load() {
		t.Fatal("memory budget not applied")
	}
	p.expire(time.Now().Add(2 * time.Minute))
	if !a.dead.Load() || !b.dead.Load() || len(p.owned) != 0 || p.e.warmMem.Load() != 0 {
		t.Fatalf("idle owned boxes not expired: %v, warm %d", p.owned, p.e.warmMem.Load())
	}
	old := handBox("old", 1)
	old.created = time.Now().Add(-time.Hour + 30*time.Second)
	p.generic = []*box{old}
	if got, _ := p.acquire("A", time.Second); got != nil || !old.dead.Load() {
		t.Fatal("a box near the end of its life was handed out")
	}
}

func TestPoolSingleUse(t *testing.T) {
	p := unitPool(t, func(c *Config) { c.SingleUse = true })
	g := handBox("g", 1)
	p.generic = []*box{g}
	b, _ := p.acquire("A", time.Second)
	p.release(b, "A")
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
