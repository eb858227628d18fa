package agent

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// eventLog is a run's events, appended by the loop and followed by any
// number of readers. Seq numbers are dense from 1.
type eventLog struct {
	mu      sync.Mutex
	events  []Event
	changed chan struct{} // closed and replaced on every append and on close
	closed  bool
	now     func() time.Time
	redact  *redactor
}

// newEventLog returns an empty, open log.
func newEventLog(now func() time.Time, r *redactor) *eventLog {
	return &eventLog{changed: make(chan struct{}), now: now, redact: r}
}

// emit appends an event whose data is v encoded as JSON, secrets hidden.
func (l *eventLog) emit(typ EventType, step int, v any) Event {
	data, err := json.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(map[string]string{"error": "encode event: " + err.Error()})
	}
	data = l.redact.Bytes(data)
	l.mu.Lock()
	defer l.mu.Unlock()
	ev := Event{Seq: len(l.events) + 1, Type: typ, Time: l.now(), Step: step, Data: data}
	if l.closed {
		return ev
	}
	l.events = append(l.events, ev)
	close(l.changed)
	l.changed = make(chan struct{})
	return ev
}

// close marks the log complete: readers finish once they have all events.
func (l *eventLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.changed)
	}
}

// since returns the events with Seq > after, whether the log is closed,
// and a channel closed on the next change.
func (l *eventLog) since(after int) ([]Event, bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if after < 0 {
		after = 0
	}
	var out []Event
	if after < len(l.events) {
		out = append(out, l.events[after:]...)
	}
	return out, l.closed, l.changed
}

// all returns a copy of every event so far.
func (l *eventLog) all() []Event {
	evs, _, _ := l.since(0)
	return evs
}

// follow streams events with Seq > after until the log is closed and
// drained, or ctx is done; the channel is then closed.
func (l *eventLog) follow(ctx context.Context, after int) <-chan Event {
	out := make(chan Event, 16)
	go func() {
		defer close(out)
		next := after
		for {
			evs, closed, changed := l.since(next)
			for _, ev := range evs {
				select {
				case out <- ev:
					next = ev.Seq
				case <-ctx.Done():
					return
				}
			}
			if len(evs) > 0 {
				continue
			}
			if closed {
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
