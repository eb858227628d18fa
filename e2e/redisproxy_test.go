package e2e

import (
	"fmt"
	"net"
	"sync"
	"testing"
)

// stallProxy is a TCP proxy in front of a Redis server that can stall:
// while stalled it forwards nothing either way (connections stay open,
// new ones are accepted and held), as a network partition or a stalled
// link does for the processes behind it and nobody else.
type stallProxy struct {
	l       net.Listener
	target  string
	mu      sync.Mutex
	cond    *sync.Cond
	stalled bool
	closed  bool
	conns   []net.Conn
}

// startStallProxy listens on a free loopback port and forwards to target
// (host:port) until the end of the test.
func startStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{l: l, target: target}
	p.cond = sync.NewCond(&p.mu)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// URL is the proxy's redis:// URL.
func (p *stallProxy) URL() string { return fmt.Sprintf("redis://%s/0", p.l.Addr()) }

// stall stops (on) or resumes (off) all forwarding.
func (p *stallProxy) stall(on bool) {
	p.mu.Lock()
	p.stalled = on
	p.mu.Unlock()
	p.cond.Broadcast()
}

// gate blocks while the proxy is stalled; it reports false once closed.
func (p *stallProxy) gate() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.stalled && !p.closed {
		p.cond.Wait()
	}
	return !p.closed
}

// track remembers a connection for close; it reports false once closed.
func (p *stallProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns = append(p.conns, c)
	return true
}

func (p *stallProxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			return
		}
		go p.serve(c)
	}
}

// serve connects c to the target once the proxy is not stalled and pipes
// both ways.
func (p *stallProxy) serve(c net.Conn) {
	if !p.gate() {
		_ = c.Close()
		return
	}
	d, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(d) {
		_ = c.Close()
		return
	}
	go p.pipe(d, c)
	p.pipe(c, d)
}

// pipe copies src to dst, holding every chunk while the proxy is stalled.
func (p *stallProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// close stops the proxy and every connection through it.
func (p *stallProxy) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	p.cond.Broadcast()
	_ = p.l.Close()
	for _, c := range conns {
		_ = c.Close()
	}
}
