package egress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/airlock-dev/airlock/core"
)

// Config configures a Proxy. Guard is required; every other zero field
// takes DefaultConfig's value.
type Config struct {
	// Guard checks every address the proxy would connect to.
	Guard *Guard
	// Resolver resolves destination names (nil: the system resolver).
	Resolver Resolver
	// Dialer opens upstream connections (nil: a net.Dialer).
	Dialer Dialer
	// DialTimeout bounds one name resolution and one connection set-up.
	DialTimeout time.Duration
	// HeaderTimeout bounds reading a request's header and, in a tunnel,
	// the TLS ClientHello.
	HeaderTimeout time.Duration
	// IdleTimeout closes a connection when no byte moved either way for
	// that long (and a client connection waiting for its next request).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's header.
	MaxHeaderBytes int
	// MaxConns bounds the client connections open at once (all calls);
	// past it a connection is answered 503 and closed.
	MaxConns int
	// MaxRecorded bounds the attempts one call's Record keeps.
	MaxRecorded int
	// Caps are the per-call defaults for the fields a CallInfo leaves zero.
	Caps Caps
	// Index is the operator's Python package index and the package names
	// every call may download (packages.go); zero: names are not checked
	// unless a call's policy lists some.
	Index PackageIndex
	// Audit, if set, is called once for every attempt, when it ends (for
	// an unregistered source too). It must not block for long.
	Audit func(Event)
	// Registerer receives the proxy's metrics (nil: not exported).
	Registerer prometheus.Registerer
	// Log receives operational messages (nil: discarded).
	Log *slog.Logger
}

// DefaultConfig returns the defaults, without a Guard.
func DefaultConfig() Config {
	return Config{
		DialTimeout:    10 * time.Second,
		HeaderTimeout:  10 * time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 32 << 10,
		MaxConns:       1024,
		MaxRecorded:    200,
		Caps:           Caps{Connections: 256, Bytes: 1 << 30},
	}
}

// withDefaults fills c's zero fields from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
	if c.Dialer == nil {
		c.Dialer = &net.Dialer{KeepAlive: 30 * time.Second}
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = d.DialTimeout
	}
	if c.HeaderTimeout <= 0 {
		c.HeaderTimeout = d.HeaderTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = d.MaxHeaderBytes
	}
	if c.MaxConns <= 0 {
		c.MaxConns = d.MaxConns
	}
	if c.MaxRecorded <= 0 {
		c.MaxRecorded = d.MaxRecorded
	}
	c.Caps = c.Caps.with(d.Caps)
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Proxy is the egress proxy of one worker host: HTTP CONNECT and plain
// HTTP from registered sandboxes to the destinations of their call's
// policy. See the package documentation.
type Proxy struct {
	cfg     Config
	net     netPath
	index   indexRule
	metrics *proxyMetrics
	slots   chan struct{} // MaxConns
	bufs    sync.Pool

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	conns  sync.WaitGroup

	mu    sync.RWMutex
	calls map[source]*call
	lns   map[net.Listener]struct{}
}

// New returns a proxy; Serve starts it on a listener.
func New(cfg Config) (*Proxy, error) {
	if cfg.Guard == nil {
		return nil, core.Errorf("egress.New", core.ErrInvalid, "config has no Guard")
	}
	cfg = cfg.withDefaults()
	ix, err := parseIndex(cfg.Index)
	if err != nil {
		return nil, fmt.Errorf("egress: package index: %w", err)
	}
	m, err := newProxyMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("egress: metrics: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		cfg:     cfg,
		net:     netPath{guard: cfg.Guard, resolver: cfg.Resolver, dialer: cfg.Dialer, dialTimeout: cfg.DialTimeout},
		index:   ix,
		metrics: m,
		slots:   make(chan struct{}, cfg.MaxConns),
		ctx:     ctx,
		cancel:  cancel,
		calls:   map[source]*call{},
		lns:     map[net.Listener]struct{}{},
	}
	p.bufs.New = func() any { b := make([]byte, bufSize); return &b }
	return p, nil
}

// Serve accepts client connections on ln until Close; it returns nil then.
func (p *Proxy) Serve(ln net.Listener) error {
	return p.serve(ln, func(c net.Conn) source { return source{addr: remoteAddr(c)} })
}

// serve accepts connections on ln until Close; sourceOf names the caller
// of each.
func (p *Proxy) serve(ln net.Listener, sourceOf func(net.Conn) source) error {
	p.mu.Lock()
	if p.ctx.Err() != nil {
		p.mu.Unlock()
		return net.ErrClosed
	}
	p.lns[ln] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.lns, ln)
		p.mu.Unlock()
	}()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("egress: accept: %w", err)
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			p.cfg.Log.Warn("egress proxy accept", "err", err)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		p.conns.Add(1)
		go func() {
			defer p.conns.Done()
			p.serveConn(c, sourceOf(c))
		}()
	}
}

// Close stops every listener, cuts every connection and waits for their
// goroutines. Registered calls stay registered (their handles still
// return their records).
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.cancel()
	for ln := range p.lns {
		_ = ln.Close()
	}
	p.mu.Unlock()
	p.conns.Wait()
	return nil
}

// Register tells the proxy that connections from src belong to the call
// info describes, until the returned handle is closed. A source already
// registered is refused with core.ErrConflict.
func (p *Proxy) Register(src netip.Addr, info CallInfo) (*Handle, error) {
	if !src.IsValid() {
		return nil, core.Errorf("egress.register", core.ErrInvalid, "no source address")
	}
	return p.register(source{addr: src.Unmap()}, info)
}

// register makes src's connections belong to the call info describes.
func (p *Proxy) register(src source, info CallInfo) (*Handle, error) {
	info.Caps = info.Caps.with(p.cfg.Caps)
	p.mu.Lock()
	defer p.mu.Unlock()
	if prev, ok := p.calls[src]; ok {
		return nil, core.E("egress.register", core.ErrConflict,
			fmt.Errorf("source %s already runs call %q of %q", src, prev.info.CallID, prev.info.Owner))
	}
	c := newCall(src, info, p.cfg.MaxRecorded)
	p.calls[src] = c
	p.metrics.calls.Inc()
	return &Handle{p: p, c: c}, nil
}

// packages returns what the proxy checks of cl's package names.
func (p *Proxy) packages(cl *call) packageCheck {
	pol := cl.info.Policy
	return packageCheck{ix: p.index, call: pol.packages, callOn: pol.packages != nil}
}

// lookup returns the call src runs, or nil.
func (p *Proxy) lookup(src source) *call {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.calls[src]
}

// Handle is one registration; Close ends it.
type Handle struct {
	p    *Proxy
	c    *call
	once sync.Once
	rec  Record
}

// closeWait bounds how long Close waits for the call's cut connections to
// finish their accounting.
const closeWait = 5 * time.Second

// Close unregisters the call's source, cuts its open connections and
// returns every attempt the call made. It may be called more than once;
// later calls return the same record.
func (h *Handle) Close() Record {
	h.once.Do(func() {
		p, c := h.p, h.c
		p.mu.Lock()
		if p.calls[c.src] == c {
			delete(p.calls, c.src)
			p.metrics.calls.Dec()
		}
		p.mu.Unlock()
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		c.cancel(errCallEnded)
		c.stopTime()
		done := make(chan struct{})
		go func() { c.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(closeWait):
			p.cfg.Log.Warn("egress: connections of a closed call still open", "call", c.info.CallID)
		}
		h.rec = c.record()
	})
	return h.rec
}

// Attempts returns what the call attempted so far, without ending it.
func (h *Handle) Attempts() Record { return h.c.record() }
