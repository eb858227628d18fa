package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// workerStreamTTL is how long a worker's own stream outlives its last
// heartbeat.
const workerStreamTTL = time.Hour

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
		tasks:     map[string]*task{},
		sessions:  map[string]struct{}{},
	}, nil
}

// redisWorker runs jobs from the shared stream and from its own stream
// (jobs of the sessions bound to it).
type redisWorker struct {
	q         *Redis
	cfg       WorkerConfig
	h         Handler
	log       *slog.Logger
	ownStream string
	cursor    string // XAUTOCLAIM position; touched only by Run's loop
	repend    bool   // a read failed: recheck own pending entries; Run's loop only

	mu       sync.Mutex
	started  bool
	tasks    map[string]*task // running jobs, by job ID
	sessions map[string]struct{}
}

// task is one running job of this worker.
type task struct {
	job    Job
	stream string
	msgID  string
	token  string
	cancel context.CancelCauseFunc
}

// delivery is one stream message handed to this worker.
type delivery struct {
	stream string
	msg    redis.XMessage
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
	rdb := w.q.rdb
	if !w.ensureGroups(ctx) {
		return nil
	}
	w.drainOwn() // session jobs left by a crashed predecessor with this ID
	w.log.Info("worker started", "concurrency", w.cfg.Concurrency)

	bgCtx, bgStop := context.WithCancel(context.WithoutCancel(ctx))
	var bg sync.WaitGroup
	w.beat(bgCtx)
	bg.Go(func() { w.heartbeatLoop(bgCtx) })
	ps := rdb.Subscribe(bgCtx, w.q.keys.cancel())
	bg.Go(func() { w.cancelLoop(bgCtx, ps) })

	base, hardStop := context.WithCancelCause(context.WithoutCancel(ctx))
	defer hardStop(nil)
	slots := make(chan struct{}, w.cfg.Concurrency)
	var wg sync.WaitGroup
	var bo backoff
	nextClaim := time.Now()
	for ctx.Err() == nil {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		free := 1
		for free < w.cfg.Concurrency {
			select {
			case slots <- struct{}{}:
				free++
				continue
			default:
			}
			break
		}
		ds, err := w.fetch(ctx, free, &nextClaim)
		if err == nil && w.repend {
			// A read that failed client-side (a Redis stall) may still
			// have been served, delivering entries to this consumer that
			// nobody runs: take back this consumer's unstarted ones now
			// rather than after the visibility timeout.
			var pend []delivery
			if pend, err = w.ownPending(ctx, free); err == nil {
				w.repend = false
				ds = append(pend, ds...)
			}
		}
		if err != nil {
			w.repend = true
			for range free {
				<-slots
			}
			if ctx.Err() != nil {
				break
			}
			if bo.n == 0 {
				w.log.Warn("reading jobs failed; retrying", "err", err)
			}
			sleepOr(bo.next(), ctx.Done())
			continue
		}
		bo.reset()
		for i, d := range ds {
			reserved := i < free
			wg.Go(func() {
				if !reserved { // an own-stream extra: wait for a slot
					select {
					case slots <- struct{}{}:
					case <-base.Done():
						return
					}
				}
				defer func() { <-slots }()
				w.process(base, d)
			})
		}
		for range free - min(free, len(ds)) {
			<-slots
		}
	}

	w.log.Info("worker stopping", "grace", w.cfg.Grace)
	w.unbindAll()
	drainWithGrace(&wg, w.cfg.Grace, func() { hardStop(errShutdown) })
	w.drainOwn()
	w.unbindAll()
	w.cleanup()
	bgStop()
	_ = ps.Close()
	bg.Wait()
	w.log.Info("worker stopped")
	return nil
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

// createGroups creates the consumer group on the shared and own streams.
func (w *redisWorker) createGroups(ctx context.Context) error {
	for _, s := range []string{w.q.keys.stream(), w.ownStream} {
		err := w.q.rdb.XGroupCreateMkStream(ctx, s, group, "0").Err()
		if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
			return err
		}
	}
	return nil
}

// fetch returns up to n deliveries from the shared stream (reclaimed ones
// first, every VisibilityTimeout/2) and any number from the own stream;
// shared-stream deliveries come first in the slice.
func (w *redisWorker) fetch(ctx context.Context, n int, nextClaim *time.Time) ([]delivery, error) {
	rdb, main := w.q.rdb, w.q.keys.stream()
	if time.Now().After(*nextClaim) {
		*nextClaim = time.Now().Add(w.q.cfg.VisibilityTimeout / 2)
		for range 10 { // sweep the pending list from the last cursor
			msgs, next, err := rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
				Stream: main, Group: group, Consumer: w.cfg.ID,
				MinIdle: w.q.cfg.VisibilityTimeout, Start: cmpOr(w.cursor, "0-0"), Count: int64(n),
			}).Result()
			if err != nil {
				return nil, w.groupErr(ctx, err)
			}
			w.cursor = next
			if len(msgs) > 0 {
				ds := make([]delivery, len(msgs))
				for i, m := range msgs {
					ds[i] = delivery{main, m}
				}
				w.log.Info("reclaimed stalled jobs", "count", len(msgs))
				return ds, nil
			}
			if next == "0-0" {
				break
			}
		}
	}
	res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: group, Consumer: w.cfg.ID, Count: int64(n), Block: w.cfg.ReadBlock,
		Streams: []string{main, w.ownStream, ">", ">"},
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, w.groupErr(ctx, err)
	}
	var ds, own []delivery
	for _, s := range res {
		for _, m := range s.Messages {
			if s.Stream == main {
				ds = append(ds, delivery{s.Stream, m})
			} else {
				own = append(own, delivery{s.Stream, m})
			}
		}
	}
	return append(ds, own...), nil
}

// ownPending returns up to n entries of the shared stream delivered to this
// worker but not being run by it (their read's reply was lost).
func (w *redisWorker) ownPending(ctx context.Context, n int) ([]delivery, error) {
	main := w.q.keys.stream()
	res, err := w.q.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: group, Consumer: w.cfg.ID, Count: 1000, Block: -1, Streams: []string{main, "0"},
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, w.groupErr(ctx, err)
	}
	w.mu.Lock()
	running := map[string]bool{}
	for _, t := range w.tasks {
		running[t.msgID] = true
	}
	w.mu.Unlock()
	var ds []delivery
	for _, s := range res {
		for _, m := range s.Messages {
			if !running[m.ID] && len(ds) < n && m.Values != nil {
				ds = append(ds, delivery{main, m})
			}
		}
	}
	return ds, nil
}

// groupErr recreates the consumer groups when Redis lost them (restarted
// without persistence) and passes err on.
func (w *redisWorker) groupErr(ctx context.Context, err error) error {
	if strings.Contains(err.Error(), "NOGROUP") {
		_ = w.createGroups(ctx)
	}
	return err
}

// cmpOr returns a, or b when a is empty.
func cmpOr(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

// parseJob decodes a stream message into a Job.
func parseJob(m redis.XMessage) (Job, error) {
	s := func(k string) string { v, _ := m.Values[k].(string); return v }
	j := Job{ID: s("id"), Owner: s("owner"), Session: s("sess"), Payload: []byte(s("pl")), replyTo: s("reply")}
	dl, err1 := strconv.ParseInt(s("dl"), 10, 64)
	enq, err2 := strconv.ParseInt(s("enq"), 10, 64)
	if j.ID == "" || err1 != nil || err2 != nil {
		return j, fmt.Errorf("queue: malformed stream entry %s", m.ID)
	}
	j.Deadline, j.EnqueuedAt = time.UnixMilli(dl), time.UnixMicro(enq)
	return j, nil
}

// process starts, runs and finishes one delivery.
func (w *redisWorker) process(base context.Context, d delivery) {
	q, rdb := w.q, w.q.rdb
	j, err := parseJob(d.msg)
	if err != nil {
		w.log.Error("dropping malformed job", "err", err)
		ctx, cancel := context.WithTimeout(base, q.cfg.SubmitTimeout)
		defer cancel()
		_ = rdb.XAck(ctx, d.stream, group, d.msg.ID).Err()
		return
	}
	log := w.log.With("job", j.ID)
	ctx, cancel := context.WithTimeout(base, q.cfg.SubmitTimeout)
	res, err := startScript.Run(ctx, rdb,
		[]string{q.keys.job(j.ID), d.stream, q.keys.dead(), q.keys.active(), q.keys.owner(j.Owner)},
		d.msg.ID, group, w.cfg.ID, q.cfg.MaxDeliveries, time.Now().UnixMilli(),
		q.cfg.ResultTTL.Milliseconds(), j.ID).Slice()
	cancel()
	if err != nil {
		// Left pending: reclaimed after the visibility timeout.
		log.Warn("could not start job; leaving it for reclaim", "err", err)
		return
	}
	verdict, _ := res[0].(string)
	att, _ := res[1].(int64)
	switch verdict {
	case "dead":
		q.m.dead.Inc()
		log.Error("job dead-lettered", "deliveries", att)
		return
	case "run":
	default:
		log.Debug("skipping job", "verdict", verdict)
		return
	}
	j.Attempt = int(att)
	t := &task{job: j, stream: d.stream, msgID: d.msg.ID, token: strconv.FormatInt(att, 10)}
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
	reply, herr := safeHandle(withProgress(hctx, pub.send), w.h, j, log)
	pub.flush()
	q.m.inflight.Dec()
	if errors.Is(context.Cause(hctx), errShutdown) {
		log.Warn("job still running at end of grace period; left for another worker")
		return
	}
	w.finish(base, t, reply, herr, failState(hctx), log)
}

// finish records a run's result (failState when herr is set), retrying while Redis is unreachable
// until the worker is hard-stopped.
func (w *redisWorker) finish(base context.Context, t *task, reply Reply, herr error, failState string, log *slog.Logger) {
	q := w.q
	state, out, msg := stateOK, reply.Payload, ""
	if herr != nil {
		state, out, msg = failState, nil, herr.Error()
	}
	jobKey := q.keys.job(t.job.ID)
	bindKey, unbindKey, bind, unbind := jobKey, jobKey, "", ""
	if herr == nil && reply.BindSession != "" {
		bindKey, bind = q.keys.session(reply.BindSession), "1"
	}
	if herr == nil && reply.UnbindSession != "" {
		unbindKey, unbind = q.keys.session(reply.UnbindSession), "1"
	}
	var bo backoff
	for {
		ctx, cancel := context.WithTimeout(base, q.cfg.SubmitTimeout)
		res, err := finishScript.Run(ctx, q.rdb,
			[]string{jobKey, t.stream, q.keys.active(), q.keys.owner(t.job.Owner), bindKey, unbindKey},
			t.msgID, group, t.token, state, out, msg, q.cfg.ResultTTL.Milliseconds(), t.job.ID,
			w.cfg.ID, bind, unbind, q.cfg.SessionTTL.Milliseconds(), ownerFlag(q.cfg.MaxPerOwner)).Text()
		cancel()
		if err == nil {
			switch res {
			case "ok":
				w.mu.Lock()
				if unbind != "" {
					delete(w.sessions, reply.UnbindSession)
				}
				if bind != "" {
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
			return
		}
	}
}

// heartbeatLoop refreshes liveness and running jobs' leases.
func (w *redisWorker) heartbeatLoop(ctx context.Context) {
	every := min(w.q.cfg.VisibilityTimeout, w.q.cfg.LivenessTTL) / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.beat(ctx)
		}
	}
}

// beat renews every running job's lease, then refreshes the liveness key
// and session bindings. The two are independent: leases first, in their own
// pipeline, so a liveness write that fails (a full Redis refuses SET) never
// lets a running job's lease lapse and the job run twice.
func (w *redisWorker) beat(ctx context.Context) {
	q := w.q
	ctx, cancel := context.WithTimeout(ctx, q.cfg.SubmitTimeout)
	defer cancel()
	w.mu.Lock()
	tasks := make([]*task, 0, len(w.tasks))
	for _, t := range w.tasks {
		tasks = append(tasks, t)
	}
	sessions := make([]string, 0, len(w.sessions))
	for s := range w.sessions {
		sessions = append(sessions, s)
	}
	w.mu.Unlock()
	if len(tasks) > 0 {
		pipe := q.rdb.Pipeline()
		cmds := make([]*redis.Cmd, len(tasks))
		for i, t := range tasks {
			cmds[i] = heartbeatScript.EvalSha(ctx, pipe, []string{q.keys.job(t.job.ID), t.stream},
				t.token, group, w.cfg.ID, t.msgID)
		}
		_, _ = pipe.Exec(ctx)
		for i, t := range tasks {
			r, err := cmds[i].Int()
			if err != nil && strings.Contains(err.Error(), "NOSCRIPT") {
				r, err = heartbeatScript.Run(ctx, q.rdb, []string{q.keys.job(t.job.ID), t.stream},
					t.token, group, w.cfg.ID, t.msgID).Int()
			}
			switch {
			case err != nil:
				w.log.Warn("lease heartbeat failed", "job", t.job.ID, "err", err)
			case r == -1:
				w.log.Warn("lease lost to another worker; cancelling", "job", t.job.ID)
				t.cancel(errLeaseLost)
			case r == 0:
				t.cancel(errJobOver)
			}
		}
	}
	pipe := q.rdb.Pipeline()
	pipe.Set(ctx, q.keys.alive(w.cfg.ID), "1", q.cfg.LivenessTTL)
	pipe.PExpire(ctx, w.ownStream, workerStreamTTL)
	for _, s := range sessions {
		pipe.PExpire(ctx, q.keys.session(s), q.cfg.SessionTTL)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		w.log.Warn("liveness heartbeat failed", "err", err)
	}
}

// cancelLoop cancels running handlers whose jobs were cancelled.
func (w *redisWorker) cancelLoop(ctx context.Context, ps *redis.PubSub) {
	var bo backoff
	for {
		msg, err := ps.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			sleepOr(bo.next(), ctx.Done())
			continue
		}
		bo.reset()
		if m, ok := msg.(*redis.Message); ok {
			w.mu.Lock()
			t := w.tasks[m.Payload]
			w.mu.Unlock()
			if t != nil {
				w.log.Info("job cancelled by its caller", "job", m.Payload)
				t.cancel(errJobOver)
			}
		}
	}
}

// cleanup removes this worker's traces at exit: its liveness key, its own
// stream, and its consumer entry in the shared group unless jobs are still
// pending under it (left running at the end of the grace period; deleting
// the consumer would drop them from the pending list and so from reclaim).
func (w *redisWorker) cleanup() {
	q, rdb := w.q, w.q.rdb
	ctx, cancel := context.WithTimeout(context.Background(), 2*q.cfg.SubmitTimeout)
	defer cancel()
	_ = rdb.Del(ctx, q.keys.alive(w.cfg.ID), w.ownStream).Err()
	pend, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: q.keys.stream(), Group: group, Start: "-", End: "+", Count: 1, Consumer: w.cfg.ID,
	}).Result()
	if err == nil && len(pend) == 0 {
		_ = rdb.XGroupDelConsumer(ctx, q.keys.stream(), group, w.cfg.ID).Err()
	}
}

// unbindAll removes this worker's session bindings.
func (w *redisWorker) unbindAll() {
	w.mu.Lock()
	sessions := make([]string, 0, len(w.sessions))
	for s := range w.sessions {
		sessions = append(sessions, s)
	}
	w.sessions = map[string]struct{}{}
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), w.q.cfg.SubmitTimeout)
	defer cancel()
	for _, s := range sessions {
		_ = unbindScript.Run(ctx, w.q.rdb, []string{w.q.keys.session(s)}, w.cfg.ID).Err()
	}
}

// drainOwn answers every job left in this worker's own stream (read or
// not) with ErrSessionLost: its session dies with the worker.
func (w *redisWorker) drainOwn() {
	q := w.q
	ctx, cancel := context.WithTimeout(context.Background(), 2*q.cfg.SubmitTimeout)
	defer cancel()
	for _, id := range []string{"0", ">"} {
		res, err := q.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: group, Consumer: w.cfg.ID, Count: 1000, Block: -1,
			Streams: []string{w.ownStream, id},
		}).Result()
		if err != nil {
			continue
		}
		for _, s := range res {
			for _, m := range s.Messages {
				j, err := parseJob(m)
				if err != nil {
					continue
				}
				_, _ = q.runAbort(j, stateLost, "worker "+w.cfg.ID+" shut down", false, w.cfg.ID, w.ownStream, m.ID)
			}
		}
	}
}

// ownerFlag is "1" when per-owner limits are on (the owner set is kept).
func ownerFlag(maxPerOwner int) string {
	if maxPerOwner > 0 {
		return "1"
	}
	return ""
}
