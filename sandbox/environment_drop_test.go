package sandbox

import (
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// TestDropEnvironment: DropEnvironment removes the idle warm containers
// of an environment's pools (generic and owned, with or without egress),
// and only of that environment, before it returns, and closes those
// pools, so the environment's image can then be removed; a container
// out on a call when it ran is retired when it comes back.
func TestDropEnvironment(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PoolSize, cfg.PoolMax, cfg.OwnerIdle = 2, 4, time.Minute
	var mu sync.Mutex
	removed := map[string]bool{}
	fd := &fakeDocker{remove: func(id string) error {
		mu.Lock()
		removed[id] = true
		mu.Unlock()
		return nil
	}}
	e := New(cfg, fd, nil)
	t.Cleanup(e.Settle)
	geo := "airlock/env-geo:0123456789abcdef"
	other := "airlock/env-geology:0123456789abcdef"
	p := e.poolOf(checked{image: geo, limits: cfg.Defaults})
	q := e.poolOf(checked{image: other, limits: cfg.Defaults})
	if p == nil || q == nil {
		t.Fatal("no environment pools")
	}
	g, o, out, keep := handBox("g", 1), handBox("o", 1), handBox("out", 1), handBox("keep", 1)
	o.owner, o.lane = "A", core.LaneInteractive
	out.owner, out.lane = "B", core.LaneInteractive
	p.mu.Lock()
	p.generic = []*box{g}
	p.owned[laneKey{"A", core.LaneInteractive}] = []idleBox{{b: o, since: time.Now()}}
	p.out = 1
	p.mu.Unlock()
	q.mu.Lock()
	q.generic = []*box{keep}
	q.mu.Unlock()

	if n := e.DropEnvironment("geo"); n != 2 {
		t.Errorf("DropEnvironment(geo) retired %d containers, want 2", n)
	}
	mu.Lock()
	if !removed["g"] || !removed["o"] || removed["keep"] {
		t.Errorf("removed %v, want g and o (geo's idle ones) and not keep (geology's)", removed)
	}
	mu.Unlock()
	e.mu.Lock()
	_, geoKept := e.pools[poolKey{image: geo}]
	_, otherKept := e.pools[poolKey{image: other}]
	e.mu.Unlock()
	if geoKept || !otherKept {
		t.Errorf("pools after the drop: geo %v geology %v, want only geology", geoKept, otherKept)
	}
	p.release(out, "B", core.LaneInteractive)
	if !out.dead.Load() {
		t.Error("a container back from a call into a dropped pool was kept")
	}
	if n := e.DropEnvironment("geo"); n != 0 {
		t.Errorf("a second drop retired %d", n)
	}
}
