package sandbox

import (
	"context"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/docker/docker/api/types/container"
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

// setShares gives b's cgroup the cpu.shares want (0: leave it) before a
// call runs on it: once per container, since a container keeps its lane
// (a generic warm one taken by a batch call is the only one that needs
// it). A failed update is logged and counted and the call runs anyway, at
// the default priority, which is slower for others but not wrong; the
// next call on b tries again.
func (e *Engine) setShares(ctx context.Context, b *box, want int64) {
	if want <= 0 || b.shares == want {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, err := e.docker.ContainerUpdate(ctx, b.id, container.UpdateConfig{Resources: container.Resources{CPUShares: want}})
	if err != nil {
		e.metrics.sharesUpdated(false)
		e.log.Warn("lowering a batch container's CPU shares failed; the call runs at the default priority",
			"container", short(b.id), "shares", want, "err", err)
		return
	}
	e.metrics.sharesUpdated(true)
	b.shares = want
}
