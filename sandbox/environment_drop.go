package sandbox

import "strings"

// DropEnvironment retires the idle warm containers of environment name:
// every pool of its images (airlock/env-NAME:*, with or without egress)
// is closed and its generic and owned idle containers are removed before
// it returns, so the environment's image can be removed next (Docker
// refuses to remove an image a container still uses). A container out on
// a call or a session is left alone; one that comes back to a closed pool
// is retired then. It returns how many containers it removed.
func (e *Engine) DropEnvironment(name string) int {
	prefix := EnvImagePrefix + name + ":"
	e.mu.Lock()
	var drop []*pool
	for k, p := range e.pools {
		if strings.HasPrefix(k.image, prefix) {
			drop = append(drop, p)
			delete(e.pools, k)
		}
	}
	e.mu.Unlock()
	var boxes []*box
	for _, p := range drop {
		p.mu.Lock()
		if !p.closed {
			p.closed = true
			close(p.stop)
		}
		boxes = append(boxes, p.generic...)
		p.generic = nil
		for k, list := range p.owned {
			for _, ib := range list {
				boxes = append(boxes, ib.b)
			}
			delete(p.owned, k)
		}
		p.mu.Unlock()
		for _, kind := range []string{"generic", "owned", "batch"} {
			e.metrics.idle.DeleteLabelValues(p.label(), kind)
		}
	}
	for _, b := range boxes {
		b.dead.Store(true)
		if b.conn != nil {
			_ = b.conn.Close()
		}
		e.removeNow(b.id)
		e.warm.give(b.limits.Memory)
	}
	return len(boxes)
}
