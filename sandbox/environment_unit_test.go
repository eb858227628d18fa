package sandbox

import (
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// TestEnvironmentPool: an environment's image gets its own pool on its
// first call (never one of the built-in images' pools), with no generic
// baseline: one owner's first call asks for no generic container, a
// second cold call does; unused, the pool goes away; a generic container
// nobody took expires after OwnerIdle. A request may name an
// environment's image only with its environment.
func TestEnvironmentPool(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PoolSize, cfg.PoolMax, cfg.OwnerIdle = 2, 4, time.Minute
	e := New(cfg, &fakeDocker{}, nil)
	t.Cleanup(e.Settle)
	img := "airlock/env-geo:0123456789abcdef"
	if _, err := e.imageFor(core.Request{Image: img}); err == nil {
		t.Fatal("an environment's image without its environment was accepted")
	}
	if got, err := e.imageFor(core.Request{Image: img, Environment: "geo"}); err != nil || got != img {
		t.Fatalf("environment image: %q %v", got, err)
	}
	if got, _ := e.imageFor(core.Request{Environment: "shell", Language: core.Python}); got != cfg.Images[core.Shell] {
		t.Fatalf("the built-in shell environment: %q", got)
	}
	if _, err := e.imageFor(core.Request{Image: "evil/image:latest", Environment: "geo"}); err == nil {
		t.Fatal("an arbitrary image was accepted")
	}
	p := e.poolOf(checked{image: img, limits: cfg.Defaults})
	if p == nil || p.base != 0 || p.key != (poolKey{image: img}) {
		t.Fatalf("environment pool: %+v", p)
	}
	if q := e.poolOf(checked{image: img, limits: cfg.Defaults}); q != p {
		t.Fatal("a second call got another pool")
	}
	now := time.Now()
	if b, src := p.acquire("A", core.LaneInteractive, time.Second); b != nil || src != "cold" {
		t.Fatalf("first call: %v %s", b, src)
	}
	if n := p.target(now); n != 0 {
		t.Fatalf("one owner's first call asks for %d generic containers", n)
	}
	p.acquire("B", core.LaneInteractive, time.Second)
	if n := p.target(time.Now()); n < 1 {
		t.Fatalf("two cold calls ask for %d generic containers", n)
	}
	g := handBox("g", 1)
	g.created = now.Add(-2 * time.Minute)
	p.mu.Lock() // the pool's fill runs in the background
	p.generic = []*box{g}
	p.mu.Unlock()
	p.expire(now)
	p.mu.Lock()
	left := len(p.generic)
	p.mu.Unlock()
	if left != 0 || !g.dead.Load() {
		t.Fatal("an untaken generic container of an environment outlived OwnerIdle")
	}
	p.mu.Lock()
	p.out, p.demand = 0, nil
	p.mu.Unlock()
	if e.dropUnused(p, now) {
		t.Fatal("a pool used just now was dropped")
	}
	if !e.dropUnused(p, now.Add(2*time.Minute)) {
		t.Fatal("an unused environment pool was kept")
	}
	e.mu.Lock()
	_, kept := e.pools[poolKey{image: img}]
	e.mu.Unlock()
	if kept {
		t.Fatal("a dropped pool is still listed")
	}
}
