package sandbox

import (
	"context"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/docker/docker/api/types/container"
)

// Container CPU weights (cgroup cpu.shares) besides Config.BatchCPUShares.
const (
	// defaultShares is the daemon's default weight, which interactive
	// calls run with.
	defaultShares = 1024
	// poolBootShares is the weight a generic warm container boots with:
	// its zygote's preload (about 2 s of CPU) yields to the calls running
	// in other containers rather than taking a core from them. Within the
	// daemon's cgroup only: against work outside it (another program on
	// the host) the boot competes as every container does. Once ready it
	// gets defaultShares (pool.startOne).
	poolBootShares = 256
)

// sharesFor is the cgroup cpu.shares a one-shot call of lane runs with:
// Config.BatchCPUShares for the batch lane, 0 (the daemon's default, 1024)
// for interactive calls or when BatchCPUShares is off.
func (e *Engine) sharesFor(lane core.Lane) int64 {
	if lane == core.LaneBatch && e.cfg.BatchCPUShares > 0 {
		return e.cfg.BatchCPUShares
	}
	return 0
}

// setShares gives b's cgroup the cpu.shares want (0: leave it): before a
// call runs on it, once per container, since a container keeps its lane
// (a generic warm one taken by a batch call is the only one that needs
// it), and to a generic one that booted at poolBootShares once it is
// ready. A failed update is logged and counted and the container goes on
// at the weight it has, which is slower for someone but not wrong; the
// next batch call on b tries again.
func (e *Engine) setShares(ctx context.Context, b *box, want int64) {
	if want <= 0 || b.shares == want {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, err := e.docker.ContainerUpdate(ctx, b.id, container.UpdateConfig{Resources: container.Resources{CPUShares: want}})
	if err != nil {
		e.metrics.sharesUpdated(false)
		e.log.Warn("setting a container's CPU shares failed; it keeps the weight it has (the next call tries again for a batch one)",
			"container", short(b.id), "shares", want, "err", err)
		return
	}
	e.metrics.sharesUpdated(true)
	b.shares = want
}
