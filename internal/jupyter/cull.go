package jupyter

import (
	"context"
	"time"
)

// cullLoop ends idle kernels every CullInterval until Stop closes.
func (g *Gateway) cullLoop() {
	t := time.NewTicker(g.cfg.CullInterval)
	defer t.Stop()
	for {
		select {
		case <-g.cfg.Stop:
			return
		case <-t.C:
			g.cull(time.Now())
		}
	}
}

// cull shuts down the kernels this gateway serves that are not running a
// request and have had no activity (request, output, interrupt here, or a
// call on the session through another route) for CullIdle, connected or
// not. It returns how many it ended.
func (g *Gateway) cull(now time.Time) int {
	type idle struct {
		k    *kernel
		last time.Time
	}
	var cands []idle
	g.mu.Lock()
	for _, k := range g.kernels {
		busy, _, last := k.state()
		if !busy && len(k.queue) == 0 && now.Sub(last) > g.cfg.CullIdle {
			cands = append(cands, idle{k, last})
		}
	}
	g.mu.Unlock()
	n := 0
	for _, c := range cands {
		k := c.k
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if s, err := g.backend.Session(ctx, k.owner, k.id); err == nil && (s.State == "busy" || now.Sub(s.LastUsed) <= g.cfg.CullIdle) {
			cancel()
			continue // used through another route meanwhile
		}
		err := g.shutdown(ctx, k.owner, k.id)
		cancel()
		if err != nil && g.lookup(k.owner, k.id) != nil {
			g.cfg.Logger.Warn("jupyter: cull kernel failed", "kernel", k.id, "owner", k.owner, "err", err)
			continue
		}
		g.cfg.Logger.Info("jupyter: culled idle kernel", "kernel", k.id, "owner", k.owner, "idle_for", now.Sub(c.last).Round(time.Second).String())
		n++
	}
	return n
}
