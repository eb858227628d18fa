package sandbox

import (
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// sinkBuffer is how many events may wait for a slow sink; past it events
// are dropped (and counted) so the container's read loop never waits.
const sinkBuffer = 1024

// forwarder delivers a call's live events to a core.Sink from its own
// goroutine, so that a slow sink never blocks reading the container.
type forwarder struct {
	ch      chan core.Event
	done    chan struct{}
	dropped atomic.Int64
}

// newForwarder starts delivering to sink; nil sink gives a nil forwarder,
// whose methods do nothing.
func newForwarder(sink core.Sink) *forwarder {
	if sink == nil {
		return nil
	}
	f := &forwarder{ch: make(chan core.Event, sinkBuffer), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for ev := range f.ch {
			sink(ev)
		}
	}()
	return f
}

// emit queues an event, or drops it when the sink is behind.
func (f *forwarder) emit(ev core.Event) {
	if f == nil {
		return
	}
	select {
	case f.ch <- ev:
	default:
		f.dropped.Add(1)
	}
}

// close ends the stream and waits (bounded) until queued events are delivered.
func (f *forwarder) close() int64 {
	if f == nil {
		return 0
	}
	close(f.ch)
	select {
	case <-f.done:
	case <-time.After(2 * time.Second):
	}
	return f.dropped.Load()
}
