package sandbox

import (
	"context"
	"github.com/airlock-dev/airlock/internal/testscale"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/docker/docker/api/types/container"
)

// countingDocker is the real daemon with ContainerUpdate counted: updates
// to other shares than the default (a batch call's), and raises to the
// default (a generic container ready after its boot at poolBootShares).
type countingDocker struct {
	DockerAPI
	updates atomic.Int64
	raises  atomic.Int64
}

func (c *countingDocker) ContainerUpdate(ctx context.Context, id string, u container.UpdateConfig) (container.UpdateResponse, error) {
	if u.CPUShares == defaultShares {
		c.raises.Add(1)
	} else {
		c.updates.Add(1)
	}
	return c.DockerAPI.ContainerUpdate(ctx, id, u)
}

// laneEngine is a pooled engine on the real daemon whose ContainerUpdate
// calls are counted.
func laneEngine(t *testing.T, mod func(*Config)) (*Engine, *countingDocker) {
	t.Helper()
	e := newTestEngine(t, func(c *Config) {
		c.PoolSize = 1
		if mod != nil {
			mod(c)
		}
	})
	cd := &countingDocker{DockerAPI: e.docker}
	e.docker = cd // before Start: nothing has used it yet
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitPool(t, e)
	return e, cd
}

// sharesCode prints the container's own CPU weight as its code sees it:
// cgroup v1 cpu.shares, or on cgroup v2 "w" and cpu.weight (shares 2 is
// weight 1, the default 1024 is 100).
const sharesCode = `
import os
p = '/sys/fs/cgroup/cpu/cpu.shares'
if os.path.exists(p):
    print(open(p).read().strip())
else:
    print('w' + open('/sys/fs/cgroup/cpu.weight').read().strip())
`

// TestBatchLaneShares: an owner's batch-lane call and interactive call run
// in different containers; the batch one's cgroup has cpu.shares 2 (a
// generic warm container lowered by one ContainerUpdate), the interactive
// one's the default 1024; the next batch call reuses the batch container
// with no second update, the next interactive call the interactive one,
// and a batch call that boots its own container gets the low shares at
// creation, with no update at all. Every generic container booted at
// poolBootShares and was raised to the default once ready: the
// interactive call's generic one shows 1024.
func TestBatchLaneShares(t *testing.T) {
	e, cd := laneEngine(t, nil)
	low, def := "2", "1024"
	call := func(lane core.Lane, lim core.Limits) core.Result {
		t.Helper()
		r := run(t, e, core.Request{Owner: "A", Lane: lane, Language: core.Python, Code: sharesCode, Limits: lim})
		if r.Status != core.StatusOK {
			t.Fatalf("call: %s", brief(r))
		}
		if w, ok := strings.CutPrefix(strings.TrimSpace(r.Stdout), "w"); ok { // cgroup v2
			low, def = "1", "100"
			r.Stdout = w
		}
		r.Stdout = strings.TrimSpace(r.Stdout)
		return r
	}
	b1 := call(core.LaneBatch, core.Limits{})
	if b1.Stdout != low || cd.updates.Load() != 1 {
		t.Fatalf("first batch call (a generic container): shares %s after %d updates, want %s after 1", b1.Stdout, cd.updates.Load(), low)
	}
	waitPool(t, e)
	i1 := call(core.LaneInteractive, core.Limits{})
	if i1.Container == b1.Container || i1.Stdout != def {
		t.Fatalf("interactive call in %s with shares %s; batch ran in %s: want another container at %s", i1.Container, i1.Stdout, b1.Container, def)
	}
	b2 := call(core.LaneBatch, core.Limits{})
	i2 := call(core.LaneInteractive, core.Limits{})
	if b2.Container != b1.Container || b2.Stdout != low || i2.Container != i1.Container || i2.Stdout != def {
		t.Fatalf("second calls: batch %s (%s), interactive %s (%s); want %s (%s) and %s (%s)",
			b2.Container, b2.Stdout, i2.Container, i2.Stdout, b1.Container, low, i1.Container, def)
	}
	if n := cd.updates.Load(); n != 1 {
		t.Fatalf("%d ContainerUpdate calls, want 1 (once per container)", n)
	}
	// Other limits than the pool's: a container booted for the call.
	cold := call(core.LaneBatch, core.Limits{Memory: 128 << 20})
	if cold.Stdout != low || cd.updates.Load() != 1 {
		t.Fatalf("cold batch call: shares %s after %d updates, want %s and still 1", cold.Stdout, cd.updates.Load(), low)
	}
	if st := e.WarmStats(); st["owner"] != 2 || st["generic"] != 2 || st["cold"] != 1 {
		t.Fatalf("container sources %v, want owner 2, generic 2, cold 1", st)
	}
	if n := cd.raises.Load(); n < 2 {
		t.Fatalf("%d raises to the default shares, want one per generic container booted (at least 2)", n)
	}
}
