package egress

import (
	"net/netip"
	"strings"
	"time"
)

// attemptLog keeps one call's attempts in start order: a registered call,
// or one fetch.
type attemptLog interface {
	slot() int
	set(slot int, a Attempt)
}

// try is one attempt in progress: its entry in the call's log, kept up to
// date, and the event the audit hook and metrics get when it ends.
type try struct {
	log  attemptLog // nil for an unregistered source
	slot int
	ev   Event
	done func(Event)
}

// start opens an attempt of call cl (nil: an unregistered source).
func (p *Proxy) start(cl *call, src source, kind, method, host string, port int) *try {
	t := &try{slot: -1, done: p.ended, ev: Event{
		Time: time.Now(), Source: src.addr, Door: src.door, Kind: kind, Method: method,
		Attempt: Attempt{Host: cleanHost(host), Port: port},
	}}
	if cl != nil {
		t.log = cl
		t.ev.Owner, t.ev.CallID = cl.info.Owner, cl.info.CallID
		t.slot = cl.slot()
		cl.set(t.slot, t.ev.Attempt)
	}
	return t
}

// ended reports a finished attempt to the metrics and the audit hook.
func (p *Proxy) ended(ev Event) {
	reason, _, _ := strings.Cut(ev.Reason, ":") // "package:NAME" counts as "package"
	p.metrics.attempt(ev.Kind, ev.Allowed, reason)
	p.metrics.bytes.WithLabelValues(ev.Kind).Add(float64(ev.Bytes))
	if p.cfg.Audit != nil {
		p.cfg.Audit(ev)
	}
}

// allow marks the attempt allowed (it keeps going; finish ends it).
func (t *try) allow(addr netip.Addr) {
	t.ev.Allowed, t.ev.Addr = true, addr
	if t.log != nil {
		t.log.set(t.slot, t.ev.Attempt)
	}
}

// refuse ends the attempt as refused for reason.
func (t *try) refuse(reason string) {
	t.ev.Allowed = false
	t.finish(reason, 0)
}

// finish ends the attempt with reason ("" for a normal end) and the bytes
// that went through.
func (t *try) finish(reason string, bytes int64) {
	t.ev.Reason, t.ev.Bytes = reason, bytes
	t.ev.Duration = time.Since(t.ev.Time)
	if t.log != nil {
		t.log.set(t.slot, t.ev.Attempt)
	}
	t.done(t.ev)
}
