package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Memory is the in-process Queue: mutex-guarded FIFOs (one per lane) with
// workers in the same process. Open returns it when no Redis is configured. Jobs do not
// survive the process; a job is only redelivered when a worker shuts down
// with it still running past its grace period.
type Memory struct {
	cfg Config
	log *slog.Logger
	m   *metrics

	mu       sync.Mutex
	closed   bool
	jobs     map[string]*memJob // active and recently finished, by ID
	finished []*memJob          // finished jobs in finish order, for expiry
	kept     int64              // bytes of the outcomes of finished
	main     []*memJob          // the interactive lane's FIFO
	batch    []*memJob          // the batch lane's FIFO (served when main is empty)
	workers  map[string]*memWorker
	sessions map[string]*memWorker
	owners   map[string]int
	active   int
	wake     chan struct{} // closed and replaced whenever work arrives
	closeCh  chan struct{}
}

// memJob is one job's shared state; fields other than job and done are
// guarded by Memory.mu.
type memJob struct {
	job        Job
	done       chan struct{} // closed when state becomes terminal
	state      string
	out        []byte
	msg        string
	cancel     context.CancelCauseFunc // set while a handler runs it
	finishedAt time.Time
}

// NewMemory returns an in-process queue.
func NewMemory(cfg Config, deps Deps) (*Memory, error) {
	q := &Memory{
		cfg:      cfg.withDefaults(),
		log:      deps.logger().With("queue", "memory"),
		jobs:     map[string]*memJob{},
		workers:  map[string]*memWorker{},
		sessions: map[string]*memWorker{},
		owners:   map[string]int{},
		wake:     make(chan struct{}),
		closeCh:  make(chan struct{}),
	}
	m, err := newMetrics(deps.Registerer, "memory", q.depth)
	if err != nil {
		return nil, err
	}
	q.m = m
	return q, nil
}

// depth reports accepted, unfinished jobs.
func (q *Memory) depth() float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return float64(q.active)
}

// Ping reports ErrClosed after Close and nil otherwise.
func (q *Memory) Ping(context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	return nil
}

// Close wakes every waiting caller with ErrClosed.
func (q *Memory) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.closeCh)
		q.broadcastLocked()
	}
	return nil
}

// Do submits j and waits for its outcome; see Queue.Do.
func (q *Memory) Do(ctx context.Context, j Job) (out []byte, err error) {
	start := time.Now()
	defer func() { q.m.e2e.WithLabelValues(outcomeLabel(err)).Observe(time.Since(start).Seconds()) }()
	mj, err := q.submit(ctx, j, start)
	if err != nil {
		return nil, err
	}
	return q.wait(ctx, mj)
}

// submit admits j and enqueues it, or attaches to the job with its ID.
func (q *Memory) submit(ctx context.Context, j Job, now time.Time) (*memJob, error) {
	if !j.Lane.valid() {
		return nil, fmt.Errorf("%w: unknown lane %q (want %q or %q)", ErrInvalid, j.Lane, LaneInteractive, LaneBatch)
	}
	if j.ID == "" {
		j.ID = randomID(16)
	}
	cd, hasCD := ctx.Deadline()
	j.Deadline = deadlineFor(cd, hasCD, j, q.cfg.DefaultTimeout, now)
	j.Attempt, j.EnqueuedAt = 0, now
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, ErrClosed
	}
	q.expireLocked(now)
	if mj, ok := q.jobs[j.ID]; ok {
		return mj, nil
	}
	if !j.Deadline.After(now) {
		return nil, fmt.Errorf("%w: %w", ErrDeadline, context.DeadlineExceeded)
	}
	if q.cfg.MaxDepth > 0 && q.active >= q.cfg.MaxDepth {
		return nil, fmt.Errorf("%w: queue depth %d reached", ErrBusy, q.cfg.MaxDepth)
	}
	if q.cfg.MaxPerOwner > 0 && q.owners[j.Owner] >= q.cfg.MaxPerOwner {
		return nil, fmt.Errorf("%w: owner %q has %d jobs in flight", ErrBusy, j.Owner, q.cfg.MaxPerOwner)
	}
	var target *memWorker
	if j.Session != "" {
		target = q.sessions[j.Session]
		if target == nil {
			return nil, notStarted{fmt.Errorf("%w: no live worker holds session %q", ErrSessionLost, j.Session)}
		}
	}
	mj := &memJob{job: j, done: make(chan struct{}), state: stateQueued}
	q.jobs[j.ID] = mj
	q.active++
	q.owners[j.Owner]++
	switch {
	case target != nil:
		target.queue = append(target.queue, mj)
	case j.Lane == LaneBatch:
		q.batch = append(q.batch, mj)
	default:
		q.main = append(q.main, mj)
	}
	q.broadcastLocked()
	return mj, nil
}

// wait blocks until mj ends, cancelling it if ctx ends or its deadline passes.
func (q *Memory) wait(ctx context.Context, mj *memJob) ([]byte, error) {
	timer := time.NewTimer(time.Until(mj.job.Deadline))
	defer timer.Stop()
	select {
	case <-mj.done:
	case <-timer.C:
		q.abort(mj, stateDeadline)
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			q.abort(mj, stateDeadline)
		} else {
			q.abort(mj, stateCanceled)
		}
	case <-q.closeCh:
		return nil, ErrClosed
	}
	<-mj.done
	q.mu.Lock()
	defer q.mu.Unlock()
	return mj.out, outcomeErr(mj.state, mj.msg)
}

// abort ends mj with state unless it already ended, cancelling its handler.
func (q *Memory) abort(mj *memJob, state string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.finishLocked(mj, state, nil, "") && mj.cancel != nil {
		mj.cancel(errJobOver)
	}
}

// finishLocked makes state mj's outcome if it has none yet (first result
// wins) and reports whether it did.
func (q *Memory) finishLocked(mj *memJob, state string, out []byte, msg string) bool {
	if mj.state != stateQueued && mj.state != stateRunning {
		return false
	}
	mj.state, mj.out, mj.msg = state, out, msg
	mj.job.Payload = nil // only the outcome is kept for ResultTTL, not the request (a file chunk)
	mj.finishedAt = time.Now()
	close(mj.done)
	q.active--
	if q.owners[mj.job.Owner]--; q.owners[mj.job.Owner] <= 0 {
		delete(q.owners, mj.job.Owner)
	}
	q.finished = append(q.finished, mj)
	q.kept += int64(len(out))
	q.expireLocked(mj.finishedAt)
	return true
}

// expireLocked forgets outcomes older than ResultTTL, and the oldest while
// the kept ones are over MaxResultBytes. A waiter still holding one reads
// it all the same.
func (q *Memory) expireLocked(now time.Time) {
	for len(q.finished) > 0 && (now.Sub(q.finished[0].finishedAt) > q.cfg.ResultTTL || q.kept > q.cfg.MaxResultBytes) {
		old := q.finished[0]
		if q.jobs[old.job.ID] == old {
			delete(q.jobs, old.job.ID)
		}
		q.kept -= int64(len(old.out))
		q.finished[0] = nil
		q.finished = q.finished[1:]
	}
}

// broadcastLocked wakes every idle worker.
func (q *Memory) broadcastLocked() {
	close(q.wake)
	q.wake = make(chan struct{})
}

// NewWorker returns a worker embedded in this process.
func (q *Memory) NewWorker(cfg WorkerConfig, h Handler) (Worker, error) {
	if h == nil {
		return nil, errors.New("queue: nil handler")
	}
	cfg = cfg.withDefaults()
	return &memWorker{q: q, cfg: cfg, h: h, log: q.log.With("worker", cfg.ID), batchDone: make(chan struct{}, 1)}, nil
}

// memWorker is an in-process worker; queue, batchRunning and stopping
// are guarded by Memory.mu.
type memWorker struct {
	q            *Memory
	cfg          WorkerConfig
	h            Handler
	log          *slog.Logger
	queue        []*memJob // session jobs routed to this worker
	batchRunning int       // batch-lane jobs taken and not yet ended
	// batchDone gets a token when a batch job ends, waking take while it
	// waits for batch room (Memory.wake only signals new work).
	batchDone chan struct{}
	started   bool
	stopping  bool
}

// ID returns the worker's name.
func (w *memWorker) ID() string { return w.cfg.ID }

// Run serves jobs until ctx is done; see Worker.Run.
func (w *memWorker) Run(ctx context.Context) error {
	q := w.q
	q.mu.Lock()
	switch {
	case w.started:
		q.mu.Unlock()
		return errors.New("queue: worker already ran")
	case q.closed:
		q.mu.Unlock()
		return ErrClosed
	case q.workers[w.cfg.ID] != nil:
		q.mu.Unlock()
		return fmt.Errorf("queue: worker ID %q already running", w.cfg.ID)
	}
	w.started = true
	q.workers[w.cfg.ID] = w
	q.mu.Unlock()

	base, hardStop := context.WithCancelCause(context.WithoutCancel(ctx))
	defer hardStop(nil)
	slots := make(chan struct{}, w.cfg.slots())
	var wg sync.WaitGroup
	for ctx.Err() == nil {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		mj, hctx, cancel := w.take(ctx, base)
		if mj == nil {
			<-slots
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			defer cancel(nil)
			w.run(hctx, mj)
		})
	}
	if w.cfg.OnStop != nil {
		w.cfg.OnStop()
	}
	w.stop()
	drainWithGrace(&wg, w.cfg.Grace, func() { hardStop(errShutdown) })
	q.mu.Lock()
	delete(q.workers, w.cfg.ID)
	q.mu.Unlock()
	return nil
}

// drainWithGrace waits for wg, calling abort once grace has passed.
func drainWithGrace(wg *sync.WaitGroup, grace time.Duration, abort func()) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
		abort()
	}
	<-done
}

// take blocks for the next job (session jobs first, then interactive,
// then batch while fewer than Concurrency batch jobs run here) and marks
// it running with a fresh handler context; it returns nil when ctx ends.
func (w *memWorker) take(ctx, base context.Context) (*memJob, context.Context, context.CancelCauseFunc) {
	q := w.q
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return nil, nil, nil
		}
		mj := popLive(&w.queue)
		if mj == nil {
			mj = popLive(&q.main)
		}
		batch := false
		if mj == nil && w.batchRunning < w.cfg.Concurrency {
			mj, batch = popLive(&q.batch), true
		}
		if mj == nil {
			wake := q.wake
			q.mu.Unlock()
			select {
			case <-wake:
			case <-w.batchDone:
			case <-ctx.Done():
				return nil, nil, nil
			}
			continue
		}
		mj.job.Attempt++
		if mj.job.Attempt > q.cfg.MaxDeliveries {
			q.finishLocked(mj, stateDead, nil, fmt.Sprintf("delivered %d times without a result", mj.job.Attempt-1))
			q.m.dead.Inc()
			q.mu.Unlock()
			continue
		}
		mj.state = stateRunning
		if batch {
			w.batchRunning++
		}
		hctx, cancel := context.WithCancelCause(base)
		hctx, cancelDL := context.WithDeadline(hctx, mj.job.Deadline)
		mj.cancel = cancel
		q.mu.Unlock()
		return mj, hctx, func(cause error) { cancelDL(); cancel(cause) }
	}
}

// usesBatchSlot reports whether j, taken by a worker, counts against its
// Concurrency batch slots: a batch-lane job that is not a session's (those
// are routed to their worker's own queue, like interactive ones).
func usesBatchSlot(j Job) bool { return j.Lane == LaneBatch && j.Session == "" }

// popLive removes and returns the first unfinished job of *s, or nil.
func popLive(s *[]*memJob) *memJob {
	for len(*s) > 0 {
		mj := (*s)[0]
		(*s)[0] = nil
		*s = (*s)[1:]
		if mj.state == stateQueued {
			return mj
		}
	}
	return nil
}

// run executes one job and records its outcome.
func (w *memWorker) run(hctx context.Context, mj *memJob) {
	q := w.q
	q.mu.Lock() // a caller's abort may drop mj.job.Payload meanwhile
	j := mj.job
	q.mu.Unlock()
	q.m.wait.Observe(time.Since(j.EnqueuedAt).Seconds())
	if j.Attempt > 1 {
		q.m.retries.Inc()
	}
	q.m.inflight.Inc()
	if f := j.OnProgress; f != nil {
		hctx = withProgress(hctx, f)
	}
	reply, err := safeHandle(hctx, w.h, j, w.log)
	q.m.inflight.Dec()

	q.mu.Lock()
	defer q.mu.Unlock()
	if usesBatchSlot(j) {
		w.batchRunning--
		select {
		case w.batchDone <- struct{}{}:
		default:
		}
	}
	mj.cancel = nil
	if mj.state != stateRunning {
		return // cancelled or timed out meanwhile; its outcome is set
	}
	if errors.Is(context.Cause(hctx), errShutdown) {
		mj.state = stateQueued
		if j.Session != "" {
			q.finishLocked(mj, stateLost, nil, "worker shut down")
			return
		}
		if j.Lane == LaneBatch {
			q.batch = append([]*memJob{mj}, q.batch...)
		} else {
			q.main = append([]*memJob{mj}, q.main...)
		}
		q.broadcastLocked()
		return
	}
	if err != nil {
		q.finishLocked(mj, failState(hctx), nil, err.Error())
		return
	}
	if reply.UnbindSession != "" && q.sessions[reply.UnbindSession] == w {
		delete(q.sessions, reply.UnbindSession)
	}
	if reply.BindSession != "" && !w.stopping {
		q.sessions[reply.BindSession] = w
	}
	q.finishLocked(mj, stateOK, reply.Payload, "")
}

// stop stops routing sessions here and answers queued session jobs.
func (w *memWorker) stop() {
	q := w.q
	q.mu.Lock()
	defer q.mu.Unlock()
	w.stopping = true
	for s, holder := range q.sessions {
		if holder == w {
			delete(q.sessions, s)
		}
	}
	for mj := popLive(&w.queue); mj != nil; mj = popLive(&w.queue) {
		q.finishLocked(mj, stateLost, nil, "worker shut down")
	}
}

// failState is the state of a run whose handler returned an error: the
// job deadline if it passed (the error is then its consequence), else
// failed.
func failState(hctx context.Context) string {
	if errors.Is(hctx.Err(), context.DeadlineExceeded) {
		return stateDeadline
	}
	return stateFailed
}

// safeHandle calls h, turning a panic into an error.
func safeHandle(ctx context.Context, h Handler, j Job, log *slog.Logger) (r Reply, err error) {
	defer func() {
		if p := recover(); p != nil {
			log.Error("handler panicked", "job", j.ID, "panic", p)
			err = fmt.Errorf("handler panic: %v", p)
		}
	}()
	return h.Handle(ctx, j)
}
