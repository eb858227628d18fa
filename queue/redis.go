package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the Queue on Redis Streams. Callers submit with one Lua script
// (admission + enqueue) and then wait on a Go channel fed by one pub/sub
// subscription per process (the job's "reply" channel); the outcome itself
// is stored in the job's hash, so a notice lost while Redis restarts is
// recovered by re-reading every waiter's hash after the subscription is
// re-established. Nothing polls: a waiter wakes on a notice, its deadline,
// its context, or (session jobs only) every LivenessTTL/2 to check that
// the session's worker is alive.
type Redis struct {
	cfg      Config
	rdb      redis.UniversalClient
	ownsRDB  bool
	keys     keyspace
	log      *slog.Logger
	m        *metrics
	clientID string
	ps       *redis.PubSub
	lisDone  chan struct{}
	closeCh  chan struct{}

	mu      sync.Mutex
	closed  bool
	waiters map[string]map[chan struct{}]struct{}
	// progress holds the OnProgress callbacks of jobs waiting in Do.
	progress map[string]func([]byte)

	// missedNotices counts jobs whose outcome was found only when their
	// caller gave up waiting: a wake-up was lost (tests expect zero).
	missedNotices atomic.Int64
}

// NewRedis returns a Redis-backed queue. It dials lazily: an unreachable
// Redis makes Do return ErrUnavailable and workers retry, not the
// constructor fail.
func NewRedis(cfg Config, deps Deps) (*Redis, error) {
	cfg = cfg.withDefaults()
	rdb, owns := deps.Redis, false
	if rdb == nil {
		c, err := NewRedisClient(cfg.RedisURL, cfg.SubmitTimeout)
		if err != nil {
			return nil, err
		}
		rdb, owns = c, true
	}
	q := &Redis{
		cfg: cfg, rdb: rdb, ownsRDB: owns,
		keys:     newKeyspace(cfg.Prefix, cfg.Name),
		log:      deps.logger().With("queue", "redis", "name", cfg.Name),
		clientID: randomID(8),
		lisDone:  make(chan struct{}),
		closeCh:  make(chan struct{}),
		waiters:  map[string]map[chan struct{}]struct{}{},
		progress: map[string]func([]byte){},
	}
	m, err := newMetrics(deps.Registerer, "redis", q.depth)
	if err != nil {
		if owns {
			_ = rdb.Close()
		}
		return nil, err
	}
	q.m = m
	q.ps = rdb.Subscribe(context.Background(), q.keys.reply(q.clientID))
	go q.listen()
	return q, nil
}

// NewRedisClient dials url ("redis://[:pass@]host:port/db") with settings
// the queue relies on: context deadlines honoured, a short dial timeout,
// one dial attempt and one command retry (so that a refused connection
// fails fast and a pooled connection broken by a Redis restart is
// replaced once). Options given in the URL take precedence.
func NewRedisClient(url string, dialTimeout time.Duration) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("queue: redis url: %w", err)
	}
	opt.ContextTimeoutEnabled = true
	if opt.DialTimeout == 0 && dialTimeout > 0 {
		opt.DialTimeout = dialTimeout
	}
	if opt.DialerRetries == 0 {
		opt.DialerRetries = 1
	}
	if opt.MaxRetries == 0 {
		opt.MaxRetries = 1
	}
	return redis.NewClient(opt), nil
}

// depth counts unfinished jobs queue-wide, for the depth gauge.
func (q *Redis) depth() float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	n, err := q.rdb.ZCount(ctx, q.keys.active(), now, "+inf").Result()
	if err != nil {
		return -1
	}
	return float64(n)
}

// Ping checks that Redis answers and accepts writes: it writes a short-lived
// probe key, which a full Redis (maxmemory, noeviction) refuses, so a
// readiness check built on Ping reports not-ready while submissions would
// be refused.
func (q *Redis) Ping(ctx context.Context) error {
	err := q.rdb.Set(ctx, q.keys.base+":ping", "1", 10*time.Second).Err()
	if isOOM(err) {
		return fmt.Errorf("%w: Redis is full (maxmemory): %w", ErrUnavailable, err)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// isOOM reports whether err is Redis refusing a write for lack of memory.
func isOOM(err error) bool {
	return err != nil && strings.Contains(err.Error(), "OOM")
}

// LiveWorkers counts the workers whose liveness key is fresh (for
// readiness checks: with Redis, a caller's job waits for a worker).
func (q *Redis) LiveWorkers(ctx context.Context) (int, error) {
	n := 0
	iter := q.rdb.Scan(ctx, 0, q.keys.alive("*"), 100).Iterator()
	for iter.Next(ctx) {
		n++
	}
	if err := iter.Err(); err != nil {
		return 0, fmt.Errorf("%w: count workers: %w", ErrUnavailable, err)
	}
	return n, nil
}

// WorkerAlive reports whether worker's liveness key exists (for reapers of
// a dead worker's sandbox containers, on any host).
func (q *Redis) WorkerAlive(ctx context.Context, worker string) (bool, error) {
	n, err := q.rdb.Exists(ctx, q.keys.alive(worker)).Result()
	if err != nil {
		return false, fmt.Errorf("%w: worker liveness: %w", ErrUnavailable, err)
	}
	return n == 1, nil
}

// Close stops the reply listener, fails waiting callers with ErrClosed and
// closes the Redis client if the queue dialled it.
func (q *Redis) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	close(q.closeCh)
	q.mu.Unlock()
	err := q.ps.Close()
	<-q.lisDone
	if q.ownsRDB {
		err = errors.Join(err, q.rdb.Close())
	}
	return err
}

// listen turns reply notices into waiter wake-ups. After every
// (re)subscription it wakes every waiter, since notices published while
// the subscription was down are lost; the waiters re-read their job hash.
func (q *Redis) listen() {
	defer close(q.lisDone)
	var bo backoff
	for {
		msg, err := q.ps.ReceiveTimeout(context.Background(), 15*time.Second)
		if err != nil {
			if q.isClosed() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				_ = q.ps.Ping(context.Background()) // detects a dead connection
				continue
			}
			if bo.n == 0 {
				q.log.Warn("reply subscription lost; reconnecting", "err", err)
			}
			if !sleepOr(bo.next(), q.closeCh) {
				return
			}
			continue
		}
		bo.reset()
		switch m := msg.(type) {
		case *redis.Subscription:
			q.wakeAll()
		case *redis.Message:
			if id, data, ok := parseProgress(m.Payload); ok {
				q.deliverProgress(id, data)
				continue
			}
			q.wake(m.Payload)
		}
	}
}

// isClosed reports whether Close was called.
func (q *Redis) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// addWaiter registers a wake-up channel for job id.
func (q *Redis) addWaiter(id string) chan struct{} {
	ch := make(chan struct{}, 1)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.waiters[id] == nil {
		q.waiters[id] = map[chan struct{}]struct{}{}
	}
	q.waiters[id][ch] = struct{}{}
	return ch
}

// removeWaiter unregisters ch.
func (q *Redis) removeWaiter(id string, ch chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.waiters[id], ch)
	if len(q.waiters[id]) == 0 {
		delete(q.waiters, id)
	}
}

// setProgress registers (or with nil removes) job id's progress callback.
func (q *Redis) setProgress(id string, f func([]byte)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if f == nil {
		delete(q.progress, id)
		return
	}
	q.progress[id] = f
}

// deliverProgress hands a progress message to its job's callback.
func (q *Redis) deliverProgress(id string, data []byte) {
	q.mu.Lock()
	f := q.progress[id]
	q.mu.Unlock()
	if f != nil {
		f(data)
	}
}

// wake signals the waiters of job id.
func (q *Redis) wake(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for ch := range q.waiters[id] {
		poke(ch)
	}
}

// wakeAll signals every waiter.
func (q *Redis) wakeAll() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, set := range q.waiters {
		for ch := range set {
			poke(ch)
		}
	}
}

// poke does a non-blocking send on a 1-buffered channel.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Do submits j and waits for its outcome; see Queue.Do.
func (q *Redis) Do(ctx context.Context, j Job) (out []byte, err error) {
	start := time.Now()
	defer func() { q.m.e2e.WithLabelValues(outcomeLabel(err)).Observe(time.Since(start).Seconds()) }()
	if j.ID == "" {
		j.ID = randomID(16)
	}
	cd, hasCD := ctx.Deadline()
	j.Deadline = deadlineFor(cd, hasCD, j, q.cfg.DefaultTimeout, start)
	j.EnqueuedAt = start
	if q.isClosed() {
		return nil, ErrClosed
	}
	sig := q.addWaiter(j.ID) // before submitting: no notice can be missed
	defer q.removeWaiter(j.ID, sig)
	if j.OnProgress != nil {
		q.setProgress(j.ID, j.OnProgress)
		defer q.setProgress(j.ID, nil)
	}
	worker, exists, err := q.submit(ctx, j)
	if err != nil {
		return nil, err
	}
	return q.await(ctx, j, worker, sig, exists)
}

// submit runs the submit script; it returns the session's worker (for
// session jobs) and whether the job ID already existed.
func (q *Redis) submit(ctx context.Context, j Job) (worker string, exists bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, q.cfg.SubmitTimeout)
	defer cancel()
	now := time.Now()
	for range 3 { // a session may move between GET and the script
		stream, sessKey, aliveKey := q.keys.stream(), q.keys.job(j.ID), q.keys.job(j.ID)
		if j.Session != "" {
			sessKey = q.keys.session(j.Session)
			worker, err = q.rdb.Get(ctx, sessKey).Result()
			if errors.Is(err, redis.Nil) {
				return "", false, fmt.Errorf("%w: no worker holds session %q", ErrSessionLost, j.Session)
			}
			if err != nil {
				return "", false, fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
			stream, aliveKey = q.keys.workerStream(worker), q.keys.alive(worker)
		}
		if !j.Deadline.After(now) {
			return "", false, fmt.Errorf("%w: %w", ErrDeadline, context.DeadlineExceeded)
		}
		res, err := submitScript.Run(ctx, q.rdb,
			[]string{q.keys.job(j.ID), stream, q.keys.active(), q.keys.owner(j.Owner), sessKey, aliveKey},
			j.ID, now.UnixMilli(), j.Deadline.UnixMilli(), q.cfg.MaxDepth, q.cfg.MaxPerOwner, j.Owner,
			q.keys.reply(q.clientID), q.cfg.ResultTTL.Milliseconds(), j.Payload, j.Session, worker,
			now.UnixMicro()).StringSlice()
		if err != nil {
			if cerr := context.Cause(ctx); cerr != nil && !errors.Is(cerr, context.DeadlineExceeded) {
				return "", false, fmt.Errorf("%w: %w", ErrCanceled, cerr)
			}
			if isOOM(err) {
				return "", false, fmt.Errorf("%w: submit job %s refused, not run: Redis is full (maxmemory): %w", ErrUnavailable, j.ID, err)
			}
			return "", false, fmt.Errorf("%w: submit job %s: %w", ErrUnavailable, j.ID, err)
		}
		switch res[0] {
		case "ok":
			return worker, false, nil
		case "exists":
			return worker, true, nil
		case "busy":
			if res[1] == "owner" {
				return "", false, fmt.Errorf("%w: owner %q has %d jobs in flight", ErrBusy, j.Owner, q.cfg.MaxPerOwner)
			}
			return "", false, fmt.Errorf("%w: queue depth %d reached", ErrBusy, q.cfg.MaxDepth)
		case "lost":
			return "", false, fmt.Errorf("%w: worker %s holding session %q is gone", ErrSessionLost, worker, j.Session)
		case "moved":
			continue
		}
	}
	return "", false, fmt.Errorf("%w: session %q keeps moving", ErrSessionLost, j.Session)
}

// await waits for job j's outcome. worker is the session's worker for
// session jobs; check asks for an immediate read of the stored outcome.
func (q *Redis) await(ctx context.Context, j Job, worker string, sig chan struct{}, check bool) ([]byte, error) {
	timer := time.NewTimer(time.Until(j.Deadline))
	defer timer.Stop()
	var liveness <-chan time.Time
	if worker != "" {
		t := time.NewTicker(q.cfg.LivenessTTL / 2)
		defer t.Stop()
		liveness = t.C
	}
	var retry <-chan time.Time
	var bo backoff
	missing := 0
	for {
		if check {
			st, out, msg, err := q.outcome(j.ID)
			switch {
			case err != nil:
				// Redis unreachable: the notice may be lost, so read
				// again after a backoff until Redis answers.
				retry = time.After(bo.next())
			case st == "":
				return nil, fmt.Errorf("%w: job %s vanished from Redis (restarted without persistence?)", ErrUnavailable, j.ID)
			case st != stateQueued && st != stateRunning:
				return out, outcomeErr(st, msg)
			}
		}
		check = false
		select {
		case <-sig:
			check = true
		case <-retry:
			retry, check = nil, true
		case <-timer.C:
			return q.abort(j, stateDeadline, "", worker)
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return q.abort(j, stateDeadline, "", worker)
			}
			out, err := q.abort(j, stateCanceled, "", worker)
			if errors.Is(err, ErrCanceled) {
				err = fmt.Errorf("%w: %w", ErrCanceled, ctx.Err())
			}
			return out, err
		case <-liveness:
			if q.workerAlive(worker) {
				missing = 0
				continue
			}
			// Declared lost only when the key is still gone a tick
			// later: a short Redis stall or a late refresh is no loss.
			if missing++; missing < 2 {
				continue
			}
			out, err, done := q.checkSession(j, worker)
			if done {
				return out, err
			}
		case <-q.closeCh:
			return nil, ErrClosed
		}
	}
}

// outcome reads a job's stored state and outcome; st is "" if the job
// hash does not exist.
func (q *Redis) outcome(id string) (st string, out []byte, msg string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), q.cfg.SubmitTimeout)
	defer cancel()
	vals, err := q.rdb.HMGet(ctx, q.keys.job(id), "st", "out", "err").Result()
	if err != nil {
		return "", nil, "", err
	}
	s := func(i int) string { v, _ := vals[i].(string); return v }
	return s(0), []byte(s(1)), s(2), nil
}

// abort ends job j with state (first outcome wins) and returns whichever
// outcome won. If Redis cannot be reached, state is returned anyway and
// the job may still run once; its late result is discarded.
func (q *Redis) abort(j Job, state, msg, worker string) ([]byte, error) {
	res, err := q.runAbort(j, state, msg, false, worker, "", "")
	if err != nil {
		q.log.Warn("could not record job end; it may still run", "job", j.ID, "state", state, "err", err)
		return nil, outcomeErr(state, msg)
	}
	if res == "done" {
		st, out, m, err := q.outcome(j.ID)
		if err == nil && st != "" {
			if state == stateDeadline {
				q.missedNotices.Add(1)
				q.log.Warn("job outcome found only at its deadline: a notice was lost", "job", j.ID)
			}
			return out, outcomeErr(st, m)
		}
	}
	return nil, outcomeErr(state, msg)
}

// workerAlive reports whether worker's liveness key exists; an error
// (Redis unreachable) counts as alive: nothing is known to be lost.
func (q *Redis) workerAlive(worker string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), q.cfg.SubmitTimeout)
	defer cancel()
	n, err := q.rdb.Exists(ctx, q.keys.alive(worker)).Result()
	return err != nil || n == 1
}

// checkSession ends a session job as lost if its worker's liveness key is
// gone; done reports that the job has an outcome to return.
func (q *Redis) checkSession(j Job, worker string) (out []byte, err error, done bool) {
	msg := "worker " + worker + " is gone"
	res, err := q.runAbort(j, stateLost, msg, true, worker, "", "")
	switch {
	case err != nil || res == "alive":
		return nil, nil, false
	case res == "ok" || res == "gone":
		return nil, outcomeErr(stateLost, msg), true
	default: // "done": the real outcome arrived meanwhile
		st, out, m, err := q.outcome(j.ID)
		if err != nil || st == "" {
			return nil, nil, false
		}
		return out, outcomeErr(st, m), true
	}
}

// runAbort runs abortScript for j.
func (q *Redis) runAbort(j Job, state, msg string, checkAlive bool, worker, stream, msgID string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), q.cfg.SubmitTimeout)
	defer cancel()
	jobKey := q.keys.job(j.ID)
	alive, sess, strm := jobKey, jobKey, jobKey
	if checkAlive {
		alive, sess = q.keys.alive(worker), q.keys.session(j.Session)
	}
	if msgID != "" {
		strm = stream
	}
	flag := ""
	if checkAlive {
		flag = "1"
	}
	return abortScript.Run(ctx, q.rdb,
		[]string{jobKey, q.keys.active(), q.keys.owner(j.Owner), alive, sess, strm},
		state, msg, q.cfg.ResultTTL.Milliseconds(), j.ID, q.keys.cancel(), flag, worker, msgID, group,
	).Text()
}
