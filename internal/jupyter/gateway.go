package jupyter

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// Gateway serves the kernels REST API and the kernels' websockets over a
// Backend. Create it with New; mount Handler behind the API's key
// authentication, with the owner in the request context (WithOwner).
type Gateway struct {
	cfg     Config
	backend Backend
	mux     *http.ServeMux

	mu      sync.Mutex
	kernels map[kernelKey]*kernel
}

// kernelKey names a kernel the gateway serves: the owner and session id.
type kernelKey struct{ owner, id string }

// ownerKey carries the authenticated owner in a request context.
type ownerKey struct{}

// WithOwner returns ctx carrying owner, the API key's owner the gateway
// acts for.
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// ownerOf returns the owner r's context carries.
func ownerOf(r *http.Request) string {
	o, _ := r.Context().Value(ownerKey{}).(string)
	return o
}

// New returns a gateway over backend and starts its culler when
// cfg.CullIdle is set (it stops with cfg.Stop).
func New(cfg Config, backend Backend) *Gateway {
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = 16 << 20
	}
	if cfg.MaxQueued <= 0 {
		cfg.MaxQueued = 256
	}
	if cfg.CullInterval <= 0 {
		cfg.CullInterval = min(max(cfg.CullIdle/10, time.Second), time.Minute)
	}
	if cfg.Logger == nil {
		cfg.Logger = nopLogger{}
	}
	g := &Gateway{cfg: cfg, backend: backend, kernels: map[kernelKey]*kernel{}}
	g.mux = g.routes()
	if cfg.CullIdle > 0 {
		go g.cullLoop()
	}
	return g
}

// Handler returns the gateway's HTTP handler: the routes of rest.go. The
// request context must carry the owner (WithOwner).
func (g *Gateway) Handler() http.Handler { return g.mux }

// kernel returns the kernel object of owner's session id, creating it
// (with the execution count the session has) on first use.
func (g *Gateway) kernel(owner, id string, count int) *kernel {
	g.mu.Lock()
	defer g.mu.Unlock()
	key := kernelKey{owner, id}
	if k, ok := g.kernels[key]; ok {
		return k
	}
	k := newKernel(g, owner, id, count)
	g.kernels[key] = k
	return k
}

// lookup returns the kernel object of owner's session id, if any.
func (g *Gateway) lookup(owner, id string) *kernel {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.kernels[kernelKey{owner, id}]
}

// forget drops a kernel whose session ended, closing its connections.
func (g *Gateway) forget(owner, id string) {
	g.mu.Lock()
	k := g.kernels[kernelKey{owner, id}]
	delete(g.kernels, kernelKey{owner, id})
	g.mu.Unlock()
	if k != nil {
		k.stop()
	}
}

// nopLogger discards logs.
type nopLogger struct{}

func (nopLogger) Info(string, ...any) {}
func (nopLogger) Warn(string, ...any) {}
