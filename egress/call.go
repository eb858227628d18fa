package egress

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// CallInfo is what the proxy knows of the call a source address runs.
type CallInfo struct {
	Owner  string
	CallID string
	Policy Policy
	Caps   Caps // zero fields take the proxy's Config.Caps
}

// Caps bound one call's network use. A zero field means the proxy's
// default (Config.Caps); there, zero means no bound.
type Caps struct {
	// Connections is how many connections (tunnels and plain requests)
	// the call may open in all.
	Connections int
	// Bytes is how many bytes may go through all the call's connections
	// together, both ways. Concurrent connections may overshoot it by at
	// most one buffer (32 KiB) each.
	Bytes int64
	// Time is how long after registration the call may use the network:
	// then its connections are cut and new ones refused.
	Time time.Duration
}

// with returns c with its zero fields taken from d.
func (c Caps) with(d Caps) Caps {
	if c.Connections == 0 {
		c.Connections = d.Connections
	}
	if c.Bytes == 0 {
		c.Bytes = d.Bytes
	}
	if c.Time == 0 {
		c.Time = d.Time
	}
	return c
}

// The causes a call's context ends with.
var (
	errTimeCap   = errors.New(ReasonTimeCap)
	errCallEnded = errors.New(ReasonCallEnded)
)

// call is one registered call: its policy, caps and what it attempted.
type call struct {
	info     CallInfo
	src      source
	ctx      context.Context // ends at Close (errCallEnded) or the time cap (errTimeCap)
	cancel   context.CancelCauseFunc
	stopTime context.CancelFunc
	maxRec   int

	bytes atomic.Int64
	wg    sync.WaitGroup // open connections

	mu       sync.Mutex
	closed   bool
	conns    int
	attempts []Attempt
	omitted  int
}

// newCall starts a call's context and its time cap.
func newCall(src source, info CallInfo, maxRec int) *call {
	c := &call{info: info, src: src, maxRec: maxRec}
	ctx, cancel := context.WithCancelCause(context.Background())
	c.ctx, c.cancel, c.stopTime = ctx, cancel, func() {}
	if info.Caps.Time > 0 {
		c.ctx, c.stopTime = context.WithDeadlineCause(ctx, time.Now().Add(info.Caps.Time), errTimeCap)
	}
	return c
}

// endReason returns why the call's context ended (ReasonTimeCap or
// ReasonCallEnded), or "" while it runs.
func (c *call) endReason() string {
	if c.ctx.Err() == nil {
		return ""
	}
	if errors.Is(context.Cause(c.ctx), errTimeCap) {
		return ReasonTimeCap
	}
	return ReasonCallEnded
}

// begin takes one connection of the call's caps, or returns why it may
// not. A successful begin must be followed by end.
func (c *call) begin() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.endReason(); r != "" || c.closed {
		if r == "" {
			r = ReasonCallEnded
		}
		return r
	}
	if n := c.info.Caps.Connections; n > 0 && c.conns >= n {
		return ReasonConnCap
	}
	if n := c.info.Caps.Bytes; n > 0 && c.bytes.Load() >= n {
		return ReasonByteCap
	}
	c.conns++
	c.wg.Add(1)
	return ""
}

// end gives back what begin took.
func (c *call) end() { c.wg.Done() }

// remaining returns how many bytes the call may still move (a large number
// when it has no byte cap).
func (c *call) remaining() int64 {
	if c.info.Caps.Bytes <= 0 {
		return 1 << 62
	}
	return c.info.Caps.Bytes - c.bytes.Load()
}

// slot reserves the call's next attempt entry, in start order; -1 when
// the call keeps no more (counted as omitted).
func (c *call) slot() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.attempts) >= c.maxRec {
		c.omitted++
		return -1
	}
	c.attempts = append(c.attempts, Attempt{})
	return len(c.attempts) - 1
}

// set fills the entry slot reserved.
func (c *call) set(slot int, a Attempt) {
	if slot < 0 {
		return
	}
	c.mu.Lock()
	c.attempts[slot] = a
	c.mu.Unlock()
}

// record returns the call's attempts so far.
func (c *call) record() Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Record{Attempts: append([]Attempt(nil), c.attempts...), Omitted: c.omitted}
}
