package sandbox

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// pool keeps started runner containers with numpy, pandas and matplotlib
// already imported. Each is handed out once and never returned.
type pool struct {
	e       *Engine
	image   string
	imageID string
	limits  core.Limits
	ready   chan *box
	wake    chan struct{}
	stop    chan struct{}
	mu      sync.Mutex
	closed  bool
}

// recycleAfter bounds how long a warm container waits before being replaced.
const recycleAfter = 30 * time.Minute

// poolFor returns the pool of an image, starting it on first use.
func (e *Engine) poolFor(image string) *pool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p, ok := e.pools[image]; ok {
		return p
	}
	p := &pool{e: e, image: image, limits: e.cfg.Defaults,
		ready: make(chan *box, e.cfg.PoolSize), wake: make(chan struct{}, 1), stop: make(chan struct{})}
	e.pools[image] = p
	e.goBackground(p.fill)
	return p
}

// takeWarm hands out a warm container for c, or nil when none matches:
// pool containers carry the default limits, no mount and no extra env.
func (e *Engine) takeWarm(c checked) *box {
	if e.cfg.PoolSize <= 0 || c.mount != "" || len(c.Env) > 0 {
		return nil
	}
	e.mu.Lock()
	p := e.pools[c.image]
	e.mu.Unlock()
	if p == nil || !sameContainerLimits(p.limits, c.limits) {
		return nil
	}
	b := p.take()
	if b != nil {
		// Labels cannot change after creation: log which job took which container.
		e.log.Debug("warm container taken", "container", short(b.id), "job", c.JobID, "owner", c.Owner)
	}
	return b
}

// sameContainerLimits compares the limits fixed at container creation.
// Timeout and output caps are enforced by Airlock per call, so they may differ.
func sameContainerLimits(a, b core.Limits) bool {
	return a.Memory == b.Memory && a.CPUs == b.CPUs && a.Pids == b.Pids &&
		a.TmpfsBytes == b.TmpfsBytes && a.NoFile == b.NoFile && a.FileSize == b.FileSize
}

// take returns a ready container or nil without waiting.
func (p *pool) take() *box {
	defer p.kick()
	for {
		select {
		case b := <-p.ready:
			if time.Since(b.created) > recycleAfter {
				p.e.destroy(b.id, &b.hj)
				continue
			}
			return b
		default:
			return nil
		}
	}
}

func (p *pool) kick() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// refillParallel is how many warm containers start at once. Each costs
// about a CPU-second (pandas preloaded); on a 2-core machine starting two at
// a time did not raise sustained throughput (make bench, API section), so
// refills go one at a time.
const refillParallel = 1

// fill keeps the pool full (starting up to refillParallel containers at
// once), checks idle containers' health and drains the pool when its image
// tag moves to a new image.
func (p *pool) fill() {
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	backoff := time.Second
	started := make(chan error, refillParallel)
	starting := 0
	for {
		for starting < refillParallel && len(p.ready)+starting < cap(p.ready) {
			if p.imageChanged() {
				p.flush()
			}
			starting++
			go func() { started <- p.startOne() }()
		}
		select {
		case <-p.stop:
			for ; starting > 0; starting-- {
				<-started
			}
			return
		case err := <-started:
			starting--
			if err == nil {
				backoff = time.Second
				continue
			}
			p.e.log.Warn("warm pool: start failed", "image", p.image, "err", err)
			select {
			case <-p.stop:
				for ; starting > 0; starting-- {
					<-started
				}
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Minute)
		case <-p.wake:
		case <-tick.C:
			if p.imageChanged() {
				p.flush()
			}
			p.check()
		}
	}
}

// startOne starts a warm container and offers it to the pool; a closed or
// full pool destroys it instead.
func (p *pool) startOne() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := p.e.startBox(ctx, p.image, p.limits, "", nil, "pool", "", "", true)
	if err != nil {
		return err
	}
	p.offer(b)
	return nil
}

// offer puts a container in the pool without ever blocking.
func (p *pool) offer(b *box) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		select {
		case p.ready <- b:
			return
		default:
		}
	}
	p.e.destroy(b.id, &b.hj)
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

// check pings every idle container and replaces dead or old ones.
func (p *pool) check() {
	n := len(p.ready)
	for i := 0; i < n; i++ {
		select {
		case b := <-p.ready:
			if time.Since(b.created) > recycleAfter || !b.ping(p.e) {
				p.e.destroy(b.id, &b.hj)
				continue
			}
			p.offer(b)
		default:
			return
		}
	}
}

// flush destroys every idle container.
func (p *pool) flush() {
	for {
		select {
		case b := <-p.ready:
			p.e.destroy(b.id, &b.hj)
		default:
			return
		}
	}
}

// drain stops refilling and destroys the idle containers.
func (p *pool) drain() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	close(p.stop)
	p.flush()
}

// ping checks that a box's runner answers.
func (b *box) ping(e *Engine) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := b.call(ctx, e, runnerRequest{Op: "ping"}, time.Now().Add(5*time.Second), 0, false)
	return err == nil && !out.ended && out.reply.Error == ""
}

// WaitWarm blocks until every pool has at least one ready container (or
// ctx ends). Without pools it returns at once.
func (e *Engine) WaitWarm(ctx context.Context) error {
	for {
		e.mu.Lock()
		cold := false
		for _, p := range e.pools {
			if len(p.ready) == 0 {
				cold = true
			}
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
