package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// attachPollMax bounds the interval at which a caller attached to a job
// submitted by another process re-reads its outcome (that job's done
// notice goes to the other process).
const attachPollMax = 2 * time.Second

// submission is what the submit script decided.
type submission struct {
	kind   string // "ok" (enqueued), "exists" (attached) or "done"
	worker string // the session's worker, for session jobs
	stream string // where the entry went
	entry  string // its stream entry ID ("" when attached)
	// deadline is the job's deadline as submitted: later than asked by
	// Job.BuildAllowance when no worker holds its environment.
	deadline time.Time
	v        string // the stored outcome, for "done"
}

// Do submits j and waits for its outcome; see Queue.Do.
func (q *Redis) Do(ctx context.Context, j Job) (out []byte, err error) {
	start := time.Now()
	defer func() { q.m.e2e.WithLabelValues(outcomeLabel(err)).Observe(time.Since(start).Seconds()) }()
	if !j.Lane.valid() {
		return nil, fmt.Errorf("%w: unknown lane %q (want %q or %q)", ErrInvalid, j.Lane, LaneInteractive, LaneBatch)
	}
	if j.ID == "" {
		j.ID = randomID(16)
	}
	cd, hasCD := ctx.Deadline()
	j.Deadline = deadlineFor(cd, hasCD, j, q.cfg.DefaultTimeout, start)
	j.EnqueuedAt = start
	if q.isClosed() {
		return nil, ErrClosed
	}
	w := q.addWaiter(j.ID) // before submitting: no notice can be missed
	defer q.removeWaiter(j.ID, w)
	if j.OnProgress != nil {
		q.setProgress(j.ID, j.OnProgress)
		defer q.setProgress(j.ID, nil)
	}
	sub, err := q.submit(ctx, j)
	if err != nil {
		return nil, err
	}
	j.Deadline = sub.deadline
	if sub.kind == "done" {
		return decodeResult(sub.v)
	}
	return q.await(ctx, j, sub, w)
}

// decodeResult turns an encoded outcome into Do's return values.
func decodeResult(v string) ([]byte, error) {
	st, msg, out, err := decodeOutcome(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrJobFailed, err)
	}
	return out, outcomeErr(st, msg)
}

// submit runs the submit script.
func (q *Redis) submit(ctx context.Context, j Job) (submission, error) {
	ctx, cancel := context.WithTimeout(ctx, q.cfg.SubmitTimeout)
	defer cancel()
	now := time.Now()
	active := q.keys.active()
	for range 3 { // a session may move between GET and the script
		sub := submission{stream: q.keys.laneStream(j.Lane)}
		sessKey, aliveKey, ownerKey := active, active, active
		envWorker := ""
		if j.Environment != "" && j.Session == "" {
			if envWorker = q.envHolder(ctx, j.Environment); envWorker != "" {
				sub.stream = q.keys.workerStream(envWorker)
			}
		}
		sub.deadline = j.Deadline
		if j.Environment != "" && envWorker == "" && j.BuildAllowance > 0 {
			sub.deadline = j.Deadline.Add(j.BuildAllowance)
		}
		if j.Session != "" {
			sessKey = q.keys.session(j.Session)
			worker, err := q.rdb.Get(ctx, sessKey).Result()
			if errors.Is(err, redis.Nil) {
				return sub, notStarted{fmt.Errorf("%w: no worker holds session %q", ErrSessionLost, j.Session)}
			}
			if err != nil {
				return sub, fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
			sub.worker, sub.stream, aliveKey = worker, q.keys.workerStream(worker), q.keys.alive(worker)
		}
		if q.cfg.MaxPerOwner > 0 {
			ownerKey = q.keys.owner(j.Owner)
		}
		if !j.Deadline.After(now) {
			return sub, fmt.Errorf("%w: %w", ErrDeadline, context.DeadlineExceeded)
		}
		res, err := submitScript.Run(ctx, q.rdb,
			[]string{active, q.keys.res(j.ID), sub.stream, ownerKey, sessKey, aliveKey},
			j.ID, now.UnixMilli(), sub.deadline.UnixMilli(), q.cfg.MaxDepth, q.cfg.MaxPerOwner, j.Owner,
			q.keys.reply(q.clientID), j.Payload, j.Session, sub.worker, now.UnixMicro(),
			q.cfg.ResultTTL.Milliseconds(), encodeOutcome(stateDeadline, "", nil)).StringSlice()
		if err != nil {
			if cerr := context.Cause(ctx); cerr != nil && !errors.Is(cerr, context.DeadlineExceeded) {
				return sub, fmt.Errorf("%w: %w", ErrCanceled, cerr)
			}
			if isOOM(err) {
				return sub, fmt.Errorf("%w: submit job %s refused, not run: Redis is full (maxmemory): %w", ErrUnavailable, j.ID, err)
			}
			return sub, fmt.Errorf("%w: submit job %s: %w", ErrUnavailable, j.ID, err)
		}
		at := func(i int) string {
			if i < len(res) {
				return res[i]
			}
			return ""
		}
		switch at(0) {
		case "ok":
			sub.kind, sub.entry = "ok", at(1)
			if envWorker != "" { // watched like a session's worker: its death loses the job
				sub.worker = envWorker
			}
			return sub, nil
		case "exists":
			sub.kind = "exists"
			return sub, nil
		case "done":
			sub.kind, sub.v = "done", at(1)
			return sub, nil
		case "busy":
			if at(1) == "owner" {
				return sub, fmt.Errorf("%w: owner %q has %d jobs in flight", ErrBusy, j.Owner, q.cfg.MaxPerOwner)
			}
			return sub, fmt.Errorf("%w: queue depth %d reached", ErrBusy, q.cfg.MaxDepth)
		case "lost":
			return sub, notStarted{fmt.Errorf("%w: worker %s holding session %q is gone", ErrSessionLost, sub.worker, j.Session)}
		case "moved":
			continue
		default:
			return sub, fmt.Errorf("%w: submit job %s: unexpected reply %q", ErrUnavailable, j.ID, res)
		}
	}
	return submission{}, fmt.Errorf("%w: session %q keeps moving", ErrSessionLost, j.Session)
}

// await waits for job j's outcome: from a done notice, or read from Redis
// after a re-subscription, an attach poll or a Redis error.
func (q *Redis) await(ctx context.Context, j Job, sub submission, w *waiter) ([]byte, error) {
	timer := time.NewTimer(time.Until(j.Deadline))
	defer timer.Stop()
	holder := q.watchHolder(sub.worker)
	defer holder.stop()
	var poll, retry <-chan time.Time
	pollEvery := 100 * time.Millisecond
	if sub.kind == "exists" {
		poll = time.After(pollEvery)
	}
	var bo backoff
	check := sub.kind == "exists"
	for {
		if v, ok := q.notified(w); ok {
			return decodeResult(v)
		}
		if check {
			kind, v, err := q.readOutcome(j.ID)
			switch {
			case err != nil:
				// Redis unreachable: the notice may be lost, so read
				// again after a backoff until Redis answers.
				retry = time.After(bo.next())
			case kind == "done":
				return decodeResult(v)
			case kind == "gone":
				return nil, fmt.Errorf("%w: job %s vanished from Redis (restarted without persistence?)", ErrUnavailable, j.ID)
			case kind == "expired":
				return nil, fmt.Errorf("%w: job %s ended but its outcome expired (ResultTTL)", ErrUnavailable, j.ID)
			}
		}
		check = false
		select {
		case <-w.ch:
			check = true
		case <-retry:
			retry, check = nil, true
		case <-poll:
			pollEvery = min(2*pollEvery, attachPollMax)
			poll, check = time.After(pollEvery), true
		case <-timer.C:
			return q.abort(j, stateDeadline, sub)
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return q.abort(j, stateDeadline, sub)
			}
			out, err := q.abort(j, stateCanceled, sub)
			if errors.Is(err, ErrCanceled) {
				err = fmt.Errorf("%w: %w", ErrCanceled, ctx.Err())
			}
			return out, err
		case <-holder.pulseC():
			if !holder.pulseGone() {
				continue
			}
			if j.Session == "" { // an environment's holder: the job moves on
				var stop bool
				if stop, check = q.envHolderGone(j, &sub, checkPulse); stop {
					holder.stop()
					holder = nil
				}
				continue
			}
			if out, err, done := q.checkSession(j, sub, checkPulse); done {
				return out, err
			}
		case <-holder.livenessC():
			if !holder.keyGone() {
				continue
			}
			if j.Session == "" {
				var stop bool
				if stop, check = q.envHolderGone(j, &sub, checkAlive); stop {
					holder.stop()
					holder = nil
				}
				continue
			}
			if out, err, done := q.checkSession(j, sub, checkAlive); done {
				return out, err
			}
		case <-q.closeCh:
			return nil, ErrClosed
		}
	}
}

// readOutcome reads job id's stored outcome: kind is "done" (with v),
// "live", "expired" or "gone".
func (q *Redis) readOutcome(id string) (kind, v string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), q.cfg.SubmitTimeout)
	defer cancel()
	res, err := outcomeScript.Run(ctx, q.rdb, []string{q.keys.res(id), q.keys.active()}, id).StringSlice()
	if err != nil {
		return "", "", err
	}
	if len(res) > 1 {
		v = res[1]
	}
	return res[0], v, nil
}

// abort ends job j with state (first outcome wins) and returns whichever
// outcome won. If Redis cannot be reached, state is returned anyway and
// the job may still run once; its late result is discarded.
func (q *Redis) abort(j Job, state string, sub submission) ([]byte, error) {
	kind, v, err := q.runAbort(j, state, "", checkNone, sub.worker, sub.stream, sub.entry, false)
	if err != nil {
		q.log.Warn("could not record job end; it may still run", "job", j.ID, "state", state, "err", err)
		return nil, outcomeErr(state, "")
	}
	if kind == "done" {
		if state == stateDeadline {
			q.missedNotices.Add(1)
			q.log.Warn("job outcome found only at its deadline: a notice was lost", "job", j.ID)
		}
		return decodeResult(v)
	}
	return nil, outcomeErr(state, "")
}

// runAbort runs abortScript for j: state and msg are the outcome to
// record; check makes it conditional on worker being gone (checkAlive,
// checkPulse); stream and msgID name the job's entry to delete (and
// acknowledge, with ack) if known.
func (q *Redis) runAbort(j Job, state, msg string, check holderCheck, worker, stream, msgID string, ack bool) (kind, v string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), q.cfg.SubmitTimeout)
	defer cancel()
	active := q.keys.active()
	ownerKey, strm, alive, sess := active, active, active, active
	if q.cfg.MaxPerOwner > 0 {
		ownerKey = q.keys.owner(j.Owner)
	}
	if msgID != "" {
		strm = stream
	}
	if check != checkNone {
		alive, sess = q.keys.alive(worker), q.keys.session(j.Session)
	}
	res, err := abortScript.Run(ctx, q.rdb,
		[]string{active, q.keys.res(j.ID), ownerKey, strm, alive, sess},
		j.ID, "", encodeOutcome(state, msg, nil),
		q.cfg.ResultTTL.Milliseconds(), q.keys.cancel(), noticePrefix(j.ID), msgID,
		string(check), worker, flag(q.cfg.MaxPerOwner > 0), flag(ack), group, q.keys.pulse(worker)).StringSlice()
	if err != nil {
		return "", "", err
	}
	if len(res) > 1 {
		v = res[1]
	}
	return res[0], v, nil
}

// flag is "1" for true and "" for false, as the scripts expect.
func flag(b bool) string {
	if b {
		return "1"
	}
	return ""
}

// itoa formats an int64 for script arguments and tokens.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }
