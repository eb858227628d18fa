package queue

import (
	"context"
	"time"
)

// pulseEvery is how often the caller of a session job checks that the
// session's worker still holds its pulse subscription.
const pulseEvery = time.Second

// pulseMisses is how many checks in a row must find a worker's pulse
// missing before its session jobs are lost: the pulseGrace they span is
// longer than a live worker takes to subscribe again after its connection
// dropped (a backoff of at most 1.6 s), and far shorter than LivenessTTL.
const pulseMisses = 4

// pulseGrace is the time pulseMisses checks span.
const pulseGrace = (pulseMisses - 1) * pulseEvery

// holderCheck is the condition under which abortScript ends a session job
// as lost.
type holderCheck string

const (
	checkNone  holderCheck = ""      // unconditionally (the worker itself is leaving)
	checkAlive holderCheck = "alive" // the worker's liveness key is gone
	checkPulse holderCheck = "pulse" // no connection holds the worker's pulse subscription
)

// holderWatch follows, for a waiting session job's caller, two signs that
// the worker holding the session is gone. Its pulse: Redis drops the
// worker's subscription to its pulse channel the moment its process dies
// (kill -9 included: the kernel closes the connection), and keeps it
// through a stall or a partition; checked every pulseEvery, the loss is
// known within about pulseGrace. Its liveness key: it lapses LivenessTTL
// after the last heartbeat, e.g. when the worker's host died and no close
// reached Redis; checked every LivenessTTL/2. A nil watch (not a session
// job) never fires.
type holderWatch struct {
	q        *Redis
	worker   string
	pulse    *time.Ticker
	liveness *time.Ticker
	// pulseMissing counts pulse checks in a row that found none.
	pulseMissing int
	// keyMissing counts liveness checks in a row that found no key.
	keyMissing int
}

// watchHolder starts watching worker; "" (no session) returns nil.
func (q *Redis) watchHolder(worker string) *holderWatch {
	if worker == "" {
		return nil
	}
	return &holderWatch{q: q, worker: worker, pulse: time.NewTicker(pulseEvery), liveness: time.NewTicker(q.cfg.LivenessTTL / 2)}
}

// stop stops the watch's tickers.
func (h *holderWatch) stop() {
	if h != nil {
		h.pulse.Stop()
		h.liveness.Stop()
	}
}

// pulseC ticks when the pulse is due for a check.
func (h *holderWatch) pulseC() <-chan time.Time {
	if h == nil {
		return nil
	}
	return h.pulse.C
}

// livenessC ticks when the liveness key is due for a check.
func (h *holderWatch) livenessC() <-chan time.Time {
	if h == nil {
		return nil
	}
	return h.liveness.C
}

// pulseGone checks the pulse and reports whether it was missing at
// pulseMisses checks in a row. A check that fails (Redis unreachable)
// knows nothing and starts the count over.
func (h *holderWatch) pulseGone() bool {
	n, err := h.q.pulseCount(h.worker)
	if err != nil || n > 0 {
		h.pulseMissing = 0
		return false
	}
	h.pulseMissing++
	return h.pulseMissing >= pulseMisses
}

// keyGone checks the liveness key and reports whether it was missing at
// two checks in a row: a short Redis stall or a late refresh is no loss.
// A check that fails (Redis unreachable) counts as the key being there.
func (h *holderWatch) keyGone() bool {
	if h.q.workerAlive(h.worker) {
		h.keyMissing = 0
		return false
	}
	h.keyMissing++
	return h.keyMissing >= 2
}

// pulseCount counts the connections subscribed to worker's pulse channel.
func (q *Redis) pulseCount(worker string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), q.cfg.SubmitTimeout)
	defer cancel()
	return pulseScript.Run(ctx, q.rdb, []string{q.keys.alive(worker)}, q.keys.pulse(worker)).Int64()
}

// workerAlive reports whether worker's liveness key exists; an error
// (Redis unreachable) counts as alive: nothing is known to be lost.
func (q *Redis) workerAlive(worker string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), q.cfg.SubmitTimeout)
	defer cancel()
	n, err := q.rdb.Exists(ctx, q.keys.alive(worker)).Result()
	return err != nil || n == 1
}

// checkSession ends a session job as lost if check finds its worker gone
// (atomically, in abortScript); done reports that the job has an outcome
// to return.
func (q *Redis) checkSession(j Job, sub submission, check holderCheck) (out []byte, err error, done bool) {
	msg := "worker " + sub.worker + " is gone"
	kind, v, err := q.runAbort(j, stateLost, msg, check, sub.worker, sub.stream, sub.entry, false)
	switch {
	case err != nil || kind == "alive":
		return nil, nil, false
	case kind == "ok" || kind == "gone":
		return nil, outcomeErr(stateLost, msg), true
	default: // "done": the real outcome arrived meanwhile
		out, err := decodeResult(v)
		return out, err, true
	}
}
