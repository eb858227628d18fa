package queue

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// workerStreamTTL is how long a worker's own stream outlives its last
// heartbeat.
const workerStreamTTL = time.Hour

// wakeField marks an own-stream entry that only wakes the worker's read
// (a batch slot became free); it carries no job.
const wakeField = "wake"

// NewWorker returns a worker reading this queue's streams.
func (q *Redis) NewWorker(cfg WorkerConfig, h Handler) (Worker, error) {
	if h == nil {
		return nil, errors.New("queue: nil handler")
	}
	cfg = cfg.withDefaults()
	return &redisWorker{
		q: q, cfg: cfg, h: h,
		log:       q.log.With("worker", cfg.ID),
		ownStream: q.keys.workerStream(cfg.ID),
		lanes:     []string{q.keys.stream(), q.keys.batchStream()},
		cursors:   map[string]string{},
		acks:      newAckBatch(),
		tasks:     map[string]*task{},
		sessions:  map[string]struct{}{},
		handed:    map[string]bool{},
	}, nil
}

// redisWorker runs jobs from the two lane streams and from its own stream
// (jobs of the sessions bound to it).
type redisWorker struct {
	q         *Redis
	cfg       WorkerConfig
	h         Handler
	log       *slog.Logger
	ownStream string
	lanes     []string // interactive, batch
	acks      *ackBatch

	// Touched only by Run's loop:
	cursors       map[string]string // XAUTOCLAIM position per lane
	repend        bool              // a read failed: recheck own pending entries
	batchFlowing  bool              // the last batch-lane read found entries
	nextBatchPoll time.Time         // when to look at an empty batch lane again
	batchIdle     int               // batch-lane looks in a row that found nothing
	claimLanes    [2]bool           // lanes whose reclaim is due (the batch one waits for batch room)

	// batchRunning counts batch-lane deliveries handed to a goroutine and
	// not yet returned from process: at most Concurrency. Run's loop adds,
	// the goroutines subtract.
	batchRunning atomic.Int64
	// roomWait is set while Run's loop blocks in a read with no batch
	// room; the first batch job to end clears it and wakes the read.
	roomWait atomic.Bool

	mu       sync.Mutex
	started  bool
	tasks    map[string]*task // running jobs, by job ID
	sessions map[string]struct{}
	// handed holds "stream id" of every delivery from its dispatch until
	// it is running, finished into the ack batch, or dropped.
	handed map[string]bool
	// advertised is what the last heartbeat advertised (Environments).
	advertised []string
}

// task is one running job of this worker.
type task struct {
	job    Job
	stream string
	msgID  string
	token  string // the entry's delivery count when this run started
	cancel context.CancelCauseFunc
}

// delivery is one stream message handed to this worker; recovered ones
// (reclaimed from another worker, or found in its own pending list) are
// checked by takeoverScript before they run.
type delivery struct {
	stream    string
	msg       redis.XMessage
	recovered bool
}

// ID returns the worker's name.
func (w *redisWorker) ID() string { return w.cfg.ID }

// Run serves jobs until ctx is done; see Worker.Run.
func (w *redisWorker) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		return errors.New("queue: worker already ran")
	}
	w.started = true
	w.mu.Unlock()
	if !w.ensureGroups(ctx) {
		return nil
	}
	w.drainOwn() // session jobs left by a crashed predecessor with this ID
	// The first liveness beat is written before "worker started" is
	// logged: a readiness check that follows the log line sees this worker.
	stopBackground := w.startBackground(ctx)
	w.log.Info("worker started", "concurrency", w.cfg.Concurrency, "interactive_reserve", w.cfg.InteractiveReserve)

	base, hardStop := context.WithCancelCause(context.WithoutCancel(ctx))
	defer hardStop(nil)
	var wg sync.WaitGroup
	w.serve(ctx, base, &wg)

	w.log.Info("worker stopping", "grace", w.cfg.Grace)
	if w.cfg.OnStop != nil {
		w.cfg.OnStop()
	}
	w.unbindAll()
	drainWithGrace(&wg, w.cfg.Grace, func() { hardStop(errShutdown) })
	w.drainOwn()
	w.unbindAll()
	w.flushAcks(context.Background())
	w.cleanup()
	stopBackground()
	w.log.Info("worker stopped")
	return nil
}

// startBackground runs the first heartbeat and starts the heartbeat, ack
// and cancel loops, which outlive ctx until the returned stop is called.
func (w *redisWorker) startBackground(ctx context.Context) (stop func()) {
	bgCtx, bgStop := context.WithCancel(context.WithoutCancel(ctx))
	var bg sync.WaitGroup
	w.beat(bgCtx)
	bg.Go(func() { w.heartbeatLoop(bgCtx) })
	bg.Go(func() { w.ackLoop(bgCtx) })
	// The pulse subscription tells session callers this process lives.
	ps := w.q.rdb.Subscribe(bgCtx, w.q.keys.cancel(), w.q.keys.pulse(w.cfg.ID))
	bg.Go(func() { w.cancelLoop(bgCtx, ps) })
	return func() {
		bgStop()
		_ = ps.Close()
		bg.Wait()
	}
}

// serve reads deliveries for the slots free and hands each to a goroutine
// (counted in wg, run under base) until ctx is done.
func (w *redisWorker) serve(ctx, base context.Context, wg *sync.WaitGroup) {
	slots := make(chan struct{}, w.cfg.slots())
	var bo backoff
	nextClaim := time.Now()
	for ctx.Err() == nil {
		free := w.takeSlots(ctx, slots)
		if free == 0 {
			continue
		}
		ds, err := w.collect(ctx, free, &nextClaim)
		if err != nil {
			w.repend = true
			for range free {
				<-slots
			}
			if ctx.Err() != nil {
				return
			}
			if bo.n == 0 {
				w.log.Warn("reading jobs failed; retrying", "err", err)
			}
			sleepOr(bo.next(), ctx.Done())
			continue
		}
		bo.reset()
		for i, d := range ds {
			w.dispatch(base, wg, slots, d, i < free)
		}
		for range free - min(free, len(ds)) {
			<-slots
		}
	}
}

// takeSlots waits for one free slot and takes every other one free now;
// it returns how many it took (0 when ctx ended first).
func (w *redisWorker) takeSlots(ctx context.Context, slots chan struct{}) int {
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return 0
	}
	free := 1
	for free < w.cfg.slots() {
		select {
		case slots <- struct{}{}:
			free++
			continue
		default:
		}
		break
	}
	return free
}

// collect fetches up to free deliveries (see fetch) and, after a failed
// read, this consumer's unstarted pending ones.
func (w *redisWorker) collect(ctx context.Context, free int, nextClaim *time.Time) ([]delivery, error) {
	room := w.batchRoom() // only grows until the dispatch
	ds, err := w.fetch(ctx, free, room, nextClaim)
	if err != nil || !w.repend {
		return ds, err
	}
	// A read that failed client-side (a Redis stall) may still have been
	// served, delivering entries to this consumer that nobody runs: take
	// back this consumer's unstarted ones now rather than after the
	// visibility timeout.
	pend, err := w.ownPending(ctx, free, room-w.countBatch(ds))
	if err != nil {
		return nil, err
	}
	w.repend = false
	// The read above delivered ds to this consumer, so they are pending
	// too: listed again, an entry would run twice (its recovered copy
	// first, then the fresh one once the first finished).
	read := make(map[string]bool, len(ds))
	for _, d := range ds {
		read[d.stream+" "+d.msg.ID] = true
	}
	out := make([]delivery, 0, len(pend)+len(ds))
	for _, d := range pend {
		if !read[d.stream+" "+d.msg.ID] {
			out = append(out, d)
		}
	}
	return append(out, ds...), nil
}

// dispatch runs delivery d in a goroutine counted in wg, unless it is
// already being handled here (recovered while running). reserved says
// whether a slot was taken for it; an extra one (own stream, repend)
// waits for a slot first.
func (w *redisWorker) dispatch(base context.Context, wg *sync.WaitGroup, slots chan struct{}, d delivery, reserved bool) {
	key := d.stream + " " + d.msg.ID
	w.mu.Lock()
	dup := w.handed[key]
	w.handed[key] = true
	w.mu.Unlock()
	if dup {
		if reserved {
			<-slots
		}
		return
	}
	batch := d.stream == w.lanes[1]
	if batch {
		w.batchRunning.Add(1)
	}
	wg.Go(func() {
		defer func() {
			w.mu.Lock()
			delete(w.handed, key)
			w.mu.Unlock()
		}()
		if !reserved {
			select {
			case slots <- struct{}{}:
			case <-base.Done():
				if batch {
					w.batchRunning.Add(-1)
				}
				return
			}
		}
		w.process(base, d)
		if batch {
			// Room first, then the slot: a loop taking the slot sees the
			// room; one blocked in a read is woken.
			w.batchRunning.Add(-1)
			<-slots
			w.wakeForRoom(base)
		} else {
			<-slots
		}
	})
}

// ensureGroups creates the consumer groups, retrying until ctx ends; it
// reports whether it succeeded.
func (w *redisWorker) ensureGroups(ctx context.Context) bool {
	var bo backoff
	for {
		err := w.createGroups(ctx)
		if err == nil {
			return true
		}
		if bo.n == 0 {
			w.log.Warn("creating consumer groups failed; retrying", "err", err)
		}
		if !sleepOr(bo.next(), ctx.Done()) {
			return false
		}
	}
}

// createGroups creates the consumer group on the lane and own streams.
func (w *redisWorker) createGroups(ctx context.Context) error {
	for _, s := range append(append([]string(nil), w.lanes...), w.ownStream) {
		err := w.q.rdb.XGroupCreateMkStream(ctx, s, group, "0").Err()
		if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
			return err
		}
	}
	return nil
}

// batchRoom is how many more batch jobs may start here.
func (w *redisWorker) batchRoom() int { return w.cfg.Concurrency - int(w.batchRunning.Load()) }

// wakeForRoom, called after a batch job ended, ends Run's read if it
// blocks for want of batch room, by adding a wake entry to the own stream
// (a blocked XREADGROUP cannot be interrupted otherwise; an entry added
// before the read blocks ends it as well, so no wake is lost). The read
// acknowledges the entry with the finished jobs' ones. If adding fails,
// the read ends after ReadBlock.
func (w *redisWorker) wakeForRoom(base context.Context) {
	if !w.roomWait.CompareAndSwap(true, false) {
		return
	}
	ctx, cancel := context.WithTimeout(base, w.q.cfg.SubmitTimeout)
	defer cancel()
	err := w.q.rdb.XAdd(ctx, &redis.XAddArgs{Stream: w.ownStream, NoMkStream: true, Values: []string{wakeField, "1"}}).Err()
	if err != nil {
		w.log.Debug("waking the read for a free batch slot failed", "err", err)
	}
}

// countBatch counts the batch-lane deliveries of ds.
func (w *redisWorker) countBatch(ds []delivery) int {
	n := 0
	for _, d := range ds {
		if d.stream == w.lanes[1] {
			n++
		}
	}
	return n
}

// laneOf names the lane of stream s.
func (w *redisWorker) laneOf(s string) Lane {
	if s == w.lanes[1] {
		return LaneBatch
	}
	return LaneInteractive
}

// process starts, runs and finishes one delivery.
func (w *redisWorker) process(base context.Context, d delivery) {
	q := w.q
	j, err := parseJob(d.msg, w.laneOf(d.stream))
	if err != nil {
		w.log.Error("dropping malformed job", "err", err)
		w.acks.add(d.stream, d.msg.ID, 0)
		return
	}
	log := w.log.With("job", j.ID)
	att := int64(1) // a first delivery (XREADGROUP ">")
	if d.recovered {
		var ok bool
		if att, ok = w.takeover(base, d, j, log); !ok {
			return
		}
	} else if !j.Deadline.After(time.Now()) {
		// Its caller records the deadline (or a resubmission does).
		log.Debug("skipping job past its deadline")
		w.acks.add(d.stream, d.msg.ID, len(j.Payload))
		return
	}
	j.Attempt = int(att)
	t := &task{job: j, stream: d.stream, msgID: d.msg.ID, token: itoa(att)}
	hctx, hcancel := context.WithCancelCause(base)
	hctx, cancelDL := context.WithDeadline(hctx, j.Deadline)
	defer cancelDL()
	t.cancel = hcancel
	w.mu.Lock()
	w.tasks[j.ID] = t
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		if w.tasks[j.ID] == t {
			delete(w.tasks, j.ID)
		}
		w.mu.Unlock()
		hcancel(nil)
	}()

	q.m.wait.Observe(time.Since(j.EnqueuedAt).Seconds())
	if j.Attempt > 1 {
		q.m.retries.Inc()
		log.Info("retrying job", "attempt", j.Attempt)
	}
	q.m.inflight.Inc()
	pub := w.newPublisher(j)
	if pub != nil {
		hctx = withProgress(hctx, pub.send)
	}
	reply, herr := safeHandle(hctx, w.h, j, log)
	pub.flush()
	q.m.inflight.Dec()
	switch cause := context.Cause(hctx); {
	case errors.Is(cause, errShutdown):
		log.Warn("job still running at end of grace period; left for another worker")
		return
	case errors.Is(cause, errLeaseLost):
		log.Warn("stale result discarded", "attempt", j.Attempt)
		return
	case errors.Is(cause, errJobOver):
		w.acks.add(d.stream, d.msg.ID, len(j.Payload))
		return
	}
	w.finish(base, t, reply, herr, failState(hctx), log)
}

// takeover runs takeoverScript on a recovered delivery; it returns the
// attempt and whether to run the job.
func (w *redisWorker) takeover(base context.Context, d delivery, j Job, log *slog.Logger) (int64, bool) {
	q := w.q
	ctx, cancel := context.WithTimeout(base, q.cfg.SubmitTimeout)
	defer cancel()
	ownerKey := q.keys.active()
	if q.cfg.MaxPerOwner > 0 {
		ownerKey = q.keys.owner(j.Owner)
	}
	res, err := takeoverScript.Run(ctx, q.rdb,
		[]string{d.stream, q.keys.active(), q.keys.res(j.ID), q.keys.dead(), ownerKey},
		d.msg.ID, group, w.cfg.ID, q.cfg.MaxDeliveries, time.Now().UnixMilli(),
		q.cfg.ResultTTL.Milliseconds(), j.ID, terminalScore(j.Deadline.UnixMilli()),
		j.replyTo, noticePrefix(j.ID), flag(q.cfg.MaxPerOwner > 0)).Slice()
	if err != nil {
		// Left pending: reclaimed after the visibility timeout.
		log.Warn("could not take over job; leaving it for reclaim", "err", err)
		return 0, false
	}
	verdict, _ := res[0].(string)
	n, _ := res[1].(int64)
	switch verdict {
	case "run":
		return n, true
	case "dead":
		q.m.dead.Inc()
		log.Error("job dead-lettered", "deliveries", n)
	default:
		log.Debug("skipping job", "verdict", verdict)
	}
	return 0, false
}

// finish records a run's result (failState when herr is set), retrying
// while Redis is unreachable until the worker is hard-stopped.
func (w *redisWorker) finish(base context.Context, t *task, reply Reply, herr error, failState string, log *slog.Logger) {
	q := w.q
	state, out, msg := stateOK, reply.Payload, ""
	if herr != nil {
		state, out, msg = failState, nil, herr.Error()
	}
	active := q.keys.active()
	ownerKey, bindKey, unbindKey, bind, unbind := active, active, active, false, false
	if q.cfg.MaxPerOwner > 0 {
		ownerKey = q.keys.owner(t.job.Owner)
	}
	if herr == nil && reply.BindSession != "" {
		bindKey, bind = q.keys.session(reply.BindSession), true
	}
	if herr == nil && reply.UnbindSession != "" {
		unbindKey, unbind = q.keys.session(reply.UnbindSession), true
	}
	size := len(t.job.Payload)
	acks := w.acks.takeDue(t.stream, t.msgID, size)
	args := []any{t.job.ID, terminalScore(t.job.Deadline.UnixMilli()), encodeOutcomeBy(state, msg, w.cfg.ID, out),
		q.cfg.ResultTTL.Milliseconds(), t.job.replyTo, flag(q.cfg.MaxPerOwner > 0), flag(bind), flag(unbind),
		w.cfg.ID, q.cfg.SessionTTL.Milliseconds(), group, t.msgID, t.token, noticePrefix(t.job.ID)}
	for _, id := range acks {
		args = append(args, id)
	}
	var bo backoff
	for {
		ctx, cancel := context.WithTimeout(base, q.cfg.SubmitTimeout)
		res, err := finishScript.Run(ctx, q.rdb,
			[]string{active, q.keys.res(t.job.ID), t.stream, ownerKey, bindKey, unbindKey}, args...).Text()
		cancel()
		if err == nil {
			if acks == nil {
				w.acks.add(t.stream, t.msgID, size)
			}
			switch res {
			case "ok":
				w.mu.Lock()
				if unbind {
					delete(w.sessions, reply.UnbindSession)
				}
				if bind {
					w.sessions[reply.BindSession] = struct{}{}
				}
				w.mu.Unlock()
			case "stale":
				log.Warn("stale result discarded", "attempt", t.job.Attempt)
			default:
				log.Debug("result not needed", "verdict", res)
			}
			return
		}
		if bo.n == 0 {
			log.Warn("storing result failed; retrying", "err", err)
		}
		if !sleepOr(bo.next(), base.Done()) {
			log.Warn("gave up storing result at shutdown; the job will be reclaimed")
			if len(acks) > 1 {
				w.acks.putBack(t.stream, acks[:len(acks)-1])
			}
			return
		}
	}
}
