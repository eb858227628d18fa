package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/docker/docker/api/types/container"
)

// TestWarmBudgetConcurrent (issue 26): containers coming back from calls
// into two pools of one engine at once, with the budget full, never take
// it past its limit, not even for a moment (every change of its use is
// seen), and once calm the budget's use is exactly the idle containers'.
func TestWarmBudgetConcurrent(t *testing.T) {
	const limit = 4
	cfg := DefaultConfig()
	cfg.PoolSize, cfg.WarmMemoryBudget = 0, limit
	e := New(cfg, &fakeDocker{}, nil)
	t.Cleanup(e.Settle)
	var peak atomic.Int64
	e.warm.onChange = func(n int64) {
		if n > peak.Load() {
			peak.Store(n)
		}
	}
	pools := []*pool{newPool(e, poolKey{image: "a"}, e.cfg.PoolSize), newPool(e, poolKey{image: "b"}, e.cfg.PoolSize)}
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprint("o", g)
			for i := 0; i < 300; i++ {
				p := pools[(g+i)%2]
				b := handBox(fmt.Sprint(owner, "-", i), 1)
				b.owner, b.lane = owner, core.LaneInteractive
				p.release(b, owner, core.LaneInteractive)
				if i%3 == 0 { // an owner's next call takes one back
					if got, _ := p.acquire(owner, core.LaneInteractive, time.Second); got != nil {
						p.discard(got)
					}
				}
			}
		}()
	}
	wg.Wait()
	e.Settle()
	if peak.Load() > limit {
		t.Fatalf("the warm budget's use reached %d, over its limit %d", peak.Load(), limit)
	}
	var idle int64
	for _, p := range pools {
		p.mu.Lock()
		for _, list := range p.owned {
			for _, ib := range list {
				idle += ib.b.limits.Memory
			}
		}
		p.mu.Unlock()
	}
	if used := e.warm.inUse(); used != idle || used > limit {
		t.Fatalf("budget use %d, idle containers %d, limit %d", used, idle, limit)
	}
}

// TestWarmBudgetCountsRemovals (issue 26): a warm container let go
// (expired, or making way for a container back from a call) keeps its room
// in the budget until it is removed, since it holds its memory until then:
// no boot or returning container can take that room meanwhile, so the warm
// containers that exist never pass the budget. Once it is gone the room is
// free again, or passes to the container that it made way for.
func TestWarmBudgetCountsRemovals(t *testing.T) {
	gate := make(chan struct{})
	f := &fakeDocker{remove: func(string) error { <-gate; return nil }}
	cfg := DefaultConfig()
	cfg.PoolSize, cfg.WarmMemoryBudget, cfg.OwnerIdle = 0, 2, time.Minute
	e := New(cfg, f, nil)
	p := newPool(e, poolKey{image: "img"}, e.cfg.PoolSize)
	p.limits.Memory = 1
	t.Cleanup(func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
		e.Settle()
	})
	a, b := handBox("a", 1), handBox("b", 1)
	a.owner, b.owner = "A", "B"
	p.release(a, "A", core.LaneInteractive)
	p.release(b, "B", core.LaneInteractive)
	if e.warm.inUse() != 2 {
		t.Fatalf("use %d, want 2", e.warm.inUse())
	}
	p.expire(time.Now().Add(2 * time.Minute)) // both expire; their removal hangs
	if !a.dead.Load() || !b.dead.Load() {
		t.Fatal("not expired")
	}
	if e.warm.take(1) {
		t.Fatalf("room taken while both expired containers still exist (use %d of 2)", e.warm.inUse())
	}
	c := handBox("c", 1)
	c.owner = "C"
	p.release(c, "C", core.LaneInteractive)
	if !c.dead.Load() {
		t.Fatal("a container back from a call was kept in the room of containers still being removed")
	}
	close(gate)
	e.Settle()
	if e.warm.inUse() != 0 || !e.warm.take(2) {
		t.Fatalf("use %d after the removals, want 0", e.warm.inUse())
	}
	e.warm.give(2)

	// Making way: a generic container above PoolSize goes, and its room
	// passes to the returning container only once it is gone.
	gate = make(chan struct{})
	g1, g2 := handBox("g1", 1), handBox("g2", 1)
	p.generic = []*box{g1, g2}
	e.warm.take(2)
	d := handBox("d", 1)
	d.owner = "D"
	p.release(d, "D", core.LaneInteractive)
	if !g2.dead.Load() || d.dead.Load() || len(p.owned) != 0 || e.warm.inUse() != 2 {
		t.Fatalf("g2 dead %v, d dead %v, idle sets %v, use %d: want g2 going and d waiting for its room", g2.dead.Load(), d.dead.Load(), p.owned, e.warm.inUse())
	}
	close(gate)
	e.Settle()
	if got := p.owned[laneKey{"D", core.LaneInteractive}]; len(got) != 1 || got[0].b != d || e.warm.inUse() != 2 {
		t.Fatalf("D's idle set %v, use %d: want d in g2's room", got, e.warm.inUse())
	}
}

// TestReleaseAcrossPools: with the budget held by another pool's generic
// containers above PoolSize, a container coming back from a call makes one
// of them go (and takes its room once it is gone) rather than being
// destroyed; at PoolSize the other pool keeps its own.
func TestReleaseAcrossPools(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PoolSize, cfg.WarmMemoryBudget = 1, 2
	e := New(cfg, &fakeDocker{}, nil)
	t.Cleanup(e.Settle)
	py, sh := newPool(e, poolKey{image: "py"}, e.cfg.PoolSize), newPool(e, poolKey{image: "sh"}, e.cfg.PoolSize)
	e.pools[poolKey{image: "py"}], e.pools[poolKey{image: "sh"}] = py, sh
	g1, g2 := handBox("g1", 1), handBox("g2", 1)
	sh.generic = []*box{g1, g2}
	e.warm.take(2)
	a := handBox("a", 1)
	a.owner = "A"
	py.release(a, "A", core.LaneInteractive)
	e.Settle()
	if !g2.dead.Load() || g1.dead.Load() || a.dead.Load() || len(py.owned) != 1 || e.warm.inUse() != 2 {
		t.Fatalf("g1 dead %v g2 dead %v a dead %v, py idle %v, use %d: want g2 gone and a idle in its room",
			g1.dead.Load(), g2.dead.Load(), a.dead.Load(), py.owned, e.warm.inUse())
	}
	b := handBox("b", 1)
	b.owner = "B"
	py.release(b, "B", core.LaneInteractive) // sh is at PoolSize now
	e.Settle()
	if !b.dead.Load() || g1.dead.Load() || e.warm.inUse() != 2 {
		t.Fatalf("b dead %v g1 dead %v use %d: want b let go, the last generic kept", b.dead.Load(), g1.dead.Load(), e.warm.inUse())
	}
}

// TestIdleExpiryWhileBooting (issue 26): an owner's idle container is
// destroyed at OwnerIdle on the pool's own schedule, even while the pool
// is stuck booting a generic container (a slow daemon) — it used to wait
// for the boot to end — and not before OwnerIdle.
func TestIdleExpiryWhileBooting(t *testing.T) {
	unblock := make(chan struct{})
	var creating atomic.Int32
	f := &fakeDocker{create: func(*container.Config, *container.HostConfig) (container.CreateResponse, error) {
		creating.Add(1)
		<-unblock
		return container.CreateResponse{}, errors.New("the daemon gave up")
	}}
	cfg := DefaultConfig()
	cfg.PoolSize, cfg.OwnerIdle = 1, 300*time.Millisecond
	e := New(cfg, f, nil)
	t.Cleanup(func() {
		close(unblock)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	p := e.poolFor(poolKey{image: "img"}, e.cfg.PoolSize)
	deadline := time.Now().Add(testscale.D(5 * time.Second))
	for creating.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the pool never started booting")
		}
		time.Sleep(5 * time.Millisecond)
	}
	b := handBox("owned", 1)
	b.owner, b.lane = "A", core.LaneInteractive
	released := time.Now()
	p.release(b, "A", core.LaneInteractive)
	time.Sleep(cfg.OwnerIdle / 2)
	if b.dead.Load() {
		t.Fatalf("the idle container was destroyed %s after release, before OwnerIdle %s", time.Since(released), cfg.OwnerIdle)
	}
	bound := cfg.OwnerIdle + testscale.D(500*time.Millisecond)
	for !b.dead.Load() {
		if time.Since(released) > bound {
			t.Fatalf("the idle container still lives %s after release (OwnerIdle %s), with a boot in progress", time.Since(released), cfg.OwnerIdle)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("expired %s after release (OwnerIdle %s) while the pool was booting", time.Since(released).Round(time.Millisecond), cfg.OwnerIdle)
	if n := creating.Load(); n != 1 {
		t.Fatalf("%d boots, want the one stuck", n)
	}
	// The room comes back once the removal has finished (retireWarm), a
	// moment after the container is marked dead.
	for used := e.warm.inUse(); used != p.limits.Memory; used = e.warm.inUse() {
		if time.Since(released) > bound+testscale.D(2*time.Second) {
			t.Fatalf("budget use %d, want only the booting container's %d", used, p.limits.Memory)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWarmBudgetAndExpiryReal (real Docker): owners calling at once (the
// pools boot on demand meanwhile) never hold idle warm containers past the
// budget, sampled with both pools locked; and an owner's container, idle
// after its call while its pool boots the generic one it took, lives until
// OwnerIdle and is gone soon after.
func TestWarmBudgetAndExpiryReal(t *testing.T) {
	e := pooledEngine(t, func(c *Config) {
		c.PoolSize, c.PoolMax, c.OwnerIdle, c.WarmMemoryBudget = 1, 3, 3*time.Second, 4*c.Defaults.Memory
	})
	var pools []*pool
	for _, img := range []string{e.cfg.Images[core.Python], e.cfg.Images[core.Shell]} {
		e.mu.Lock()
		pools = append(pools, e.pools[poolKey{image: img}])
		e.mu.Unlock()
	}
	stop := make(chan struct{})
	var peak atomic.Int64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var idle int64
			for _, p := range pools { // both held at once: one consistent sample
				p.mu.Lock()
				for _, b := range p.generic {
					idle += b.limits.Memory
				}
				for _, list := range p.owned {
					for _, ib := range list {
						idle += ib.b.limits.Memory
					}
				}
			}
			for i := len(pools) - 1; i >= 0; i-- {
				pools[i].mu.Unlock()
			}
			if idle > peak.Load() {
				peak.Store(idle)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, lang := range []core.Language{core.Python, core.Shell} {
				if r := run(t, e, core.Request{Owner: fmt.Sprint("burst", i), Language: lang, Code: pyOrSh(lang, "print(1)", "echo 1")}); r.Status != core.StatusOK {
					t.Errorf("call: %s", brief(r))
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	if peak.Load() > e.cfg.WarmMemoryBudget {
		t.Fatalf("idle warm containers held %d bytes, over the %d budget", peak.Load(), e.cfg.WarmMemoryBudget)
	}
	t.Logf("idle warm containers peaked at %d MiB of the %d MiB budget", peak.Load()>>20, e.cfg.WarmMemoryBudget>>20)

	// Let the burst's containers expire, then one owner's call.
	time.Sleep(e.cfg.OwnerIdle + testscale.D(2*time.Second))
	r := run(t, e, core.Request{Owner: "late", Language: core.Python, Code: "print(1)"})
	released := time.Now()
	if r.Status != core.StatusOK {
		t.Fatal(brief(r))
	}
	exists := func() bool { _, err := e.docker.ContainerInspect(context.Background(), r.Container); return err == nil }
	time.Sleep(e.cfg.OwnerIdle / 2)
	if !exists() {
		t.Fatalf("the owner's container was gone %s after its call, before OwnerIdle %s", time.Since(released), e.cfg.OwnerIdle)
	}
	bound := e.cfg.OwnerIdle + testscale.D(3*time.Second) // the removal itself on a busy host
	for exists() {
		if time.Since(released) > bound {
			t.Fatalf("the owner's idle container still exists %s after its call (OwnerIdle %s)", time.Since(released).Round(time.Millisecond), e.cfg.OwnerIdle)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the owner's idle container was gone %s after its call (OwnerIdle %s)", time.Since(released).Round(time.Millisecond), e.cfg.OwnerIdle)
}
