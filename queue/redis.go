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
// (dedupe + admission + enqueue) and then wait on a Go channel fed by one
// pub/sub subscription per process (its reply channel, plus the queue's
// cancel channel); a worker's done notice carries the outcome itself, so
// the caller reads nothing. The outcome is also stored in the job's result
// key, so a notice lost while Redis restarts is recovered by re-reading
// every waiter's result after the subscription is re-established. Nothing
// polls on the normal path: a waiter wakes on a notice, its deadline, its
// context, (session jobs) every second and every LivenessTTL/2 to check
// that the session's worker is alive, or (a caller that attached to a job
// another process submitted) on a slow re-read of the stored outcome.
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
	waiters map[string]map[*waiter]struct{}
	// progress holds the OnProgress callbacks of jobs waiting in Do.
	progress map[string]func([]byte)

	// missedNotices counts jobs whose outcome was found only when their
	// caller gave up waiting: a wake-up was lost (tests expect zero).
	missedNotices atomic.Int64
}

// waiter is one Do waiting for its job; v and has are guarded by Redis.mu.
type waiter struct {
	ch  chan struct{} // poked on a notice or a re-subscription
	v   string        // the encoded outcome, when a done notice carried it
	has bool
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
		waiters:  map[string]map[*waiter]struct{}{},
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
	q.ps = rdb.Subscribe(context.Background(), q.keys.reply(q.clientID), q.keys.cancel())
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

// SessionHolder returns the ID of the worker the queue binds session id
// to, or "" when no worker holds it (the binding expired or was removed).
func (q *Redis) SessionHolder(ctx context.Context, id string) (string, error) {
	w, err := q.rdb.Get(ctx, q.keys.session(id)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%w: session binding of %s: %w", ErrUnavailable, id, err)
	}
	return w, nil
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

// listen turns notices into waiter wake-ups. After every (re)subscription
// it wakes every waiter, since notices published while the subscription
// was down are lost; the waiters re-read their stored outcome.
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
			if id, v, ok := parseDone(m.Payload); ok {
				q.deliverDone(id, v)
			}
		}
	}
}

// isClosed reports whether Close was called.
func (q *Redis) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// addWaiter registers a waiter for job id.
func (q *Redis) addWaiter(id string) *waiter {
	w := &waiter{ch: make(chan struct{}, 1)}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.waiters[id] == nil {
		q.waiters[id] = map[*waiter]struct{}{}
	}
	q.waiters[id][w] = struct{}{}
	return w
}

// removeWaiter unregisters w.
func (q *Redis) removeWaiter(id string, w *waiter) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.waiters[id], w)
	if len(q.waiters[id]) == 0 {
		delete(q.waiters, id)
	}
}

// notified returns the outcome a done notice brought w, if any.
func (q *Redis) notified(w *waiter) (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return w.v, w.has
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

// deliverDone hands job id's outcome to its waiters.
func (q *Redis) deliverDone(id, v string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for w := range q.waiters[id] {
		w.v, w.has = v, true
		poke(w.ch)
	}
}

// wakeAll signals every waiter.
func (q *Redis) wakeAll() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, set := range q.waiters {
		for w := range set {
			poke(w.ch)
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
