package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// bufSize is the relay's buffer per direction.
const bufSize = 32 << 10

// relay copies between a tunnel's client (read through cr, which may
// hold bytes already buffered) and upstream until both directions end,
// the call's byte cap or time cap is reached, the call ends, or nothing
// moves either way for the idle timeout. It returns the bytes moved and
// why it was cut ("" when both sides closed normally).
func (p *Proxy) relay(cl *call, client net.Conn, cr io.Reader, up net.Conn) (int64, string) {
	var (
		moved  atomic.Int64
		last   atomic.Int64 // unix nanoseconds of the last byte
		once   sync.Once
		reason string
	)
	cut := func(r string) {
		if r == "" {
			r = p.endReason(cl) // a connection closed because the call or the proxy ended
		}
		once.Do(func() {
			reason = r
			_ = client.Close()
			_ = up.Close()
		})
	}
	stop := context.AfterFunc(cl.ctx, func() { cut(cl.endReason()) })
	defer stop()
	last.Store(time.Now().UnixNano())
	done := make(chan struct{})
	defer close(done)
	go func() {
		idle := p.cfg.IdleTimeout
		t := time.NewTimer(idle)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				quiet := time.Since(time.Unix(0, last.Load()))
				if quiet >= idle {
					cut(ReasonIdle)
					return
				}
				t.Reset(idle - quiet)
			}
		}
	}()
	half := func(dst net.Conn, src io.Reader) {
		bp := p.bufs.Get().(*[]byte)
		defer p.bufs.Put(bp)
		buf := *bp
		for {
			rem := cl.remaining()
			if rem <= 0 {
				cut(ReasonByteCap)
				return
			}
			n, err := src.Read(buf[:min(int64(len(buf)), rem)])
			if n > 0 {
				cl.bytes.Add(int64(n))
				moved.Add(int64(n))
				last.Store(time.Now().UnixNano())
				if _, werr := dst.Write(buf[:n]); werr != nil {
					cut("")
					return
				}
			}
			if errors.Is(err, io.EOF) {
				if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
					return
				}
				cut("")
				return
			}
			if err != nil {
				cut("")
				return
			}
		}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); half(up, cr) }()
	go func() { defer wg.Done(); half(client, up) }()
	wg.Wait()
	cut("")
	return moved.Load(), reason
}
