package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/approvals"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// Errors the Manager returns; each carries a core.Code, which is what the
// API maps.
var (
	// ErrNotFound: no such run, or another owner's run.
	ErrNotFound = core.E("agent", core.ErrNotFound, errors.New("run not found"))
	// ErrNoModel: no model or base URL is configured.
	ErrNoModel = core.E("agent", core.ErrNoModel, errors.New("no model configured (set --model/AIRLOCK_MODEL and --base-url/OPENAI_BASE_URL)"))
	// ErrInvalidRequest: the RunRequest cannot start a run.
	ErrInvalidRequest = core.E("agent", core.ErrInvalid, errors.New("invalid run request"))
	// ErrBusy: too many runs are active.
	ErrBusy = core.E("agent", core.ErrBusy, errors.New("too many active runs"))
	// ErrRunActive: a follow-up names a previous run still going.
	ErrRunActive = core.E("agent", core.ErrConflict, errors.New("previous run has not finished"))
	// ErrClosed: the Manager is closed.
	ErrClosed = core.E("agent", core.ErrUnavailable, errors.New("manager closed"))
)

// ManagerConfig tunes a Manager. Zero values mean the defaults.
type ManagerConfig struct {
	// Loop configures every run.
	Loop Config
	// MaxActive bounds the runs this Manager drives; Start answers ErrBusy
	// beyond it and takeovers wait. 0 means 32.
	MaxActive int
	// Pending stores the approvals runs wait on (internal/approvals:
	// Memory or Redis); nil means a new in-memory store.
	Pending approvals.Store
	// Store holds run records, checkpoints, event logs and approval
	// decisions (kinds "run", "runevents", "rundecisions" and the
	// server-wide index "runs-active"); Managers sharing it (replicas)
	// serve each other's runs and take over those whose driver died. nil
	// means a new in-memory store, and then Close ends running runs as
	// cancelled instead of leaving them to be taken over.
	Store state.Store
	// ReplicaID names this Manager as a run's holder; "" means random.
	ReplicaID string
	// LeaseTTL is how long a run's lease lasts without renewal before
	// another Manager may take the run over; 0 means 6s.
	LeaseTTL time.Duration
	// LeaseRenew is how often the driving Manager renews; 0 means 2s.
	LeaseRenew time.Duration
	// ScanEvery is how often a Manager looks for runs with an expired
	// lease; 0 means 2s.
	ScanEvery time.Duration
	// PollWait bounds one blocking read of an event or decision log; 0
	// means 1s.
	PollWait time.Duration
	// Retention is how long finished runs and their events are kept; 0
	// means 7 days.
	Retention time.Duration
	// Caller is dispatcher.Call.Caller for the audit log; "" means "agent".
	Caller string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Manager runs agent loops in the background for the HTTP API and the
// CLI. Runs live in the state store: any Manager sharing it answers Get,
// Events, Cancel and Approve for any run, and one whose lease ran out is
// taken over from its checkpoint. It is safe for concurrent use.
type Manager struct {
	cfg      ManagerConfig
	provider Provider
	logger   *slog.Logger
	loop     *loop
	store    state.Store
	id       string
	handoff  bool // leave runs to other replicas on Close
	ctx      context.Context
	stop     context.CancelFunc
	wg       sync.WaitGroup

	mu     sync.Mutex
	runs   map[string]*run // runs this Manager drives
	closed bool
}

// NewManager returns a Manager running loops with tools against the
// provider (already resolved, see ResolveProvider). A provider that is not
// Configured still gives a Manager: Start then answers ErrNoModel.
func NewManager(cfg ManagerConfig, tools Tools, provider Provider, logger *slog.Logger) *Manager {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxActive <= 0 {
		cfg.MaxActive = 32
	}
	if cfg.Pending == nil {
		cfg.Pending = approvals.NewMemory(nil)
	}
	if cfg.Caller == "" {
		cfg.Caller = "agent"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	handoff := cfg.Store != nil
	if cfg.Store == nil {
		cfg.Store = state.NewMemory(cfg.Now)
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 6 * time.Second
	}
	if cfg.LeaseRenew <= 0 {
		cfg.LeaseRenew = 2 * time.Second
	}
	if cfg.ScanEvery <= 0 {
		cfg.ScanEvery = 2 * time.Second
	}
	if cfg.PollWait <= 0 {
		cfg.PollWait = time.Second
	}
	if cfg.Retention <= 0 {
		cfg.Retention = 7 * 24 * time.Hour
	}
	if cfg.ReplicaID == "" {
		id, _ := newRunID()
		cfg.ReplicaID = "replica_" + id[len("run_"):]
	}
	cfg.Loop = cfg.Loop.withDefaults()
	logger = logger.With("component", "agent")
	l := &loop{
		cfg: cfg.Loop, tools: tools, store: pendingStore{cfg.Pending}, logger: logger,
		caller: cfg.Caller, now: cfg.Now,
		model: newModel(provider, logger),
	}
	ctx, stop := context.WithCancel(context.Background())
	m := &Manager{cfg: cfg, provider: provider, logger: logger, loop: l, store: cfg.Store, id: cfg.ReplicaID,
		handoff: handoff, ctx: ctx, stop: stop, runs: map[string]*run{}}
	m.wg.Add(1)
	go m.scan()
	return m
}

// Configured reports whether a model and base URL are configured, so the
// UI can show a banner when they are not.
func (m *Manager) Configured() bool { return m.provider.Configured() }

// Start validates req and starts a run in the background. With
// PreviousRunID the run continues that run's conversation: an unknown or
// another owner's run is ErrNotFound, one still going ErrConflict.
func (m *Manager) Start(req RunRequest) (wire.Run, error) {
	if m.provider.BaseURL == "" || (req.Model == "" && m.provider.Model == "") {
		return wire.Run{}, ErrNoModel
	}
	if _, err := initialMessages("", req); err != nil {
		return wire.Run{}, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	var cp *checkpoint
	if req.PreviousRunID != "" {
		var err error
		if cp, err = m.continued(&req); err != nil {
			return wire.Run{}, err
		}
	}
	id, err := newRunID()
	if err != nil {
		return wire.Run{}, fmt.Errorf("start run: %w", err)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return wire.Run{}, ErrClosed
	}
	if len(m.runs) >= m.cfg.MaxActive {
		m.mu.Unlock()
		return wire.Run{}, ErrBusy
	}
	r := m.newRun(id, req.Owner, req, m.cfg.Now())
	r.cp = cp
	m.runs[id] = r
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.version = -1 // create
	if err := m.persist(r); err != nil {
		m.forget(r)
		return wire.Run{}, fmt.Errorf("start run: %w", err)
	}
	if _, err := m.store.Put(ctx, activeKey(id), []byte(req.Owner), state.PutOptions{}); err != nil {
		m.forget(r)
		return wire.Run{}, fmt.Errorf("start run: index: %w", err)
	}
	m.logger.Info("run started", "run", id, "owner", req.Owner, "provider", m.provider, "previous", req.PreviousRunID)
	m.launch(r)
	return r.view(), nil
}

// continued loads the previous run of a follow-up and returns the new
// run's first checkpoint: the previous conversation plus the new goal.
func (m *Manager) continued(req *RunRequest) (*checkpoint, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	prev, err := m.getRecord(ctx, req.Owner, req.PreviousRunID)
	if err != nil {
		return nil, err
	}
	if !prev.Status.Final() {
		return nil, fmt.Errorf("%w: run %s is still %s", ErrRunActive, prev.ID, prev.Status)
	}
	msgs := prev.Checkpoint.conversation()
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: run %s has no conversation to continue", ErrInvalidRequest, prev.ID)
	}
	next, err := initialMessages("", *req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	msgs = append(msgs, next[1:]...) // without the empty system message
	if req.SessionID == "" {
		req.SessionID = prev.Request.SessionID
	}
	if req.Mount == "" {
		req.Mount = prev.Request.Mount
	}
	return &checkpoint{Msgs: msgs}, nil
}

// newRun returns a run driven by this Manager.
func (m *Manager) newRun(id, owner string, req RunRequest, created time.Time) *run {
	r := &run{
		id: id, owner: owner, req: req, created: created,
		log:   &eventLog{store: m.store, key: eventsKey(owner, id), now: m.cfg.Now, logger: m.logger, ttl: m.cfg.Retention},
		inbox: newMailbox(), done: make(chan struct{}), status: wire.RunRunning,
	}
	r.ctx, r.cancel = context.WithCancelCause(m.ctx)
	r.save = func() { m.checkpointed(r) }
	return r
}

// forget drops a run this Manager no longer drives.
func (m *Manager) forget(r *run) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runs[r.id] == r {
		delete(m.runs, r.id)
	}
}

// launch drives r in the background.
func (m *Manager) launch(r *run) {
	if r.cancelReq {
		r.cancel(errCancelled)
	}
	m.wg.Add(1)
	go m.execute(r.ctx, r.cancel, r)
}

// execute runs r and records how it ended.
func (m *Manager) execute(ctx context.Context, cancel context.CancelCauseFunc, r *run) {
	defer m.wg.Done()
	defer cancel(nil)
	defer m.forget(r)
	defer close(r.done)
	aux, stopAux := context.WithCancel(ctx)
	var side sync.WaitGroup
	side.Add(2)
	go func() { defer side.Done(); m.holdLease(aux, r) }()
	go func() { defer side.Done(); m.followDecisions(aux, r) }()
	defer side.Wait()
	defer stopAux()
	if b := m.cfg.Loop.WallBudget; b > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithDeadlineCause(ctx, r.created.Add(b), errWallBudget)
		defer stop()
	}
	o := m.loop.execute(ctx, r)
	cause := context.Cause(ctx)
	if errors.Is(cause, errLeaseLost) {
		m.logger.Warn("run left to the replica holding it", "run", r.id)
		return
	}
	if errors.Is(cause, errShutdown) && m.handoff {
		stopAux()
		side.Wait()
		if err := m.persistWith(r, func(rec *runRecord) { rec.Holder, rec.LeaseUntil = "", time.Time{} }); err != nil {
			m.logger.Warn("hand over run", "run", r.id, "err", err)
		}
		m.logger.Info("run handed over on shutdown", "run", r.id)
		return
	}
	m.loop.releasePending(r)
	errMsg := ""
	if o.err != nil {
		errMsg = o.err.Error()
		r.log.emit(wire.EventError, r.view().Steps, map[string]any{"message": errMsg, "status": o.status})
	}
	r.update(func(r *run) {
		r.status, r.final, r.errMsg, r.ended = o.status, o.final, errMsg, m.cfg.Now()
	})
	stopAux()
	side.Wait()
	if err := m.persist(r); err != nil {
		m.logger.Warn("record finished run", "run", r.id, "err", err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
	if err := m.store.Delete(dctx, activeKey(r.id), 0); err != nil {
		m.logger.Warn("unindex finished run", "run", r.id, "err", err)
	}
	if err := m.store.DeleteLog(dctx, decisionsKey(r.owner, r.id)); err != nil {
		m.logger.Warn("drop approval decisions", "run", r.id, "err", err)
	}
	dcancel()
	v := r.view()
	// The record is final before the stream ends: a reader who saw
	// run_finished finds Get up to date.
	r.log.emit(wire.EventRunFinished, v.Steps, map[string]any{
		"status": v.Status, "steps": v.Steps, "usage": v.Usage, "final_answer": v.FinalAnswer, "error": v.Error,
	})
	m.logger.Info("run finished", "run", r.id, "status", v.Status, "steps", v.Steps,
		"total_tokens", v.Usage.TotalTokens, "model_ms", v.Usage.ModelMS, "tool_ms", v.Usage.ToolMS)
}

// local returns the run this Manager drives, if it is owner's id.
func (m *Manager) local(owner, id string) *run {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.runs[id]; ok && r.owner == owner {
		return r
	}
	return nil
}

// Get returns a snapshot of owner's run id.
func (m *Manager) Get(owner, id string) (wire.Run, error) {
	if r := m.local(owner, id); r != nil {
		return r.view(), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec, err := m.getRecord(ctx, owner, id)
	if err != nil {
		return wire.Run{}, err
	}
	return rec.view(), nil
}

// view is the snapshot of a stored run.
func (rec runRecord) view() wire.Run {
	return wire.Run{
		ID: rec.ID, Status: rec.Status, Steps: rec.Steps, Usage: rec.Usage,
		FinalAnswer: rec.Final, Error: rec.Error, Created: rec.Created, Ended: rec.Ended,
		PendingApprovals: append([]string(nil), rec.Pending...),
	}
}

// Events replays the run's events with Seq > after, then follows live
// ones, from the store: it works on any replica. The channel closes once
// the run has finished and every event is delivered, or when ctx is done;
// callers that stop reading must cancel ctx.
func (m *Manager) Events(ctx context.Context, owner, id string, after int) (<-chan wire.RunEvent, error) {
	if m.local(owner, id) == nil {
		if _, err := m.getRecord(ctx, owner, id); err != nil {
			return nil, err
		}
	}
	return m.followEvents(ctx, owner, id, after), nil
}

// Cancel stops owner's run id: the model call and in-flight tool calls
// are cancelled. A run driven by another replica is marked, and that
// replica cancels it at its next lease renewal. Cancelling a finished run
// does nothing.
func (m *Manager) Cancel(owner, id string) error {
	if r := m.local(owner, id); r != nil {
		r.cancel(errCancelled)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 10 {
		rec, err := m.getRecord(ctx, owner, id)
		if err != nil {
			return err
		}
		if rec.Status.Final() || rec.CancelRequested {
			return nil
		}
		rec.CancelRequested = true
		if _, err := m.putRecord(ctx, rec, rec.Version); !errors.Is(err, state.ErrConflict) {
			if err != nil {
				return fmt.Errorf("cancel run %s: %w", id, err)
			}
			return nil
		}
	}
	return fmt.Errorf("cancel run %s: %w", id, state.ErrConflict)
}

// Approve decides the pending approval token of owner's run runID: when
// approve is true the call runs (exactly once), otherwise the model is
// told it was rejected, with reason. The decision goes to the run's
// decision log, so it reaches the run on whatever replica drives it.
// ErrNotPending means the token is not waiting (unknown, already decided,
// or the run ended).
func (m *Manager) Approve(owner, runID, token string, approve bool, reason string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r := m.local(owner, runID)
	if r == nil {
		rec, err := m.getRecord(ctx, owner, runID)
		if err != nil {
			return err
		}
		if rec.Status.Final() {
			return ErrNotPending
		}
	} else if r.finished() {
		return ErrNotPending
	}
	if _, err := m.loop.store.Take(ctx, runID, token); err != nil {
		if errors.Is(err, ErrNotPending) {
			return err
		}
		return fmt.Errorf("take pending approval: %w", err)
	}
	b, _ := json.Marshal(storedDecision{Token: token, Approve: approve, Reason: reason})
	if _, err := m.store.Append(ctx, decisionsKey(owner, runID), b, 0, m.cfg.Retention); err != nil {
		if r == nil {
			return fmt.Errorf("record approval decision: %w", err)
		}
		m.logger.Warn("record approval decision", "run", runID, "err", err)
		r.inbox.push(decision{token: token, approve: approve, reason: reason}) // this replica drives it
	}
	return nil
}

// Close cancels every run and waits for them to end, or for ctx. With a
// shared Store (ManagerConfig.Store set) running runs are handed over:
// their lease is released so another replica resumes them at once.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	for _, r := range m.runs {
		r.cancel(errShutdown)
	}
	m.mu.Unlock()
	m.stop()
	done := make(chan struct{})
	go func() {
		m.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close agent manager: %w", ctx.Err())
	}
}

// newRunID returns a random run id.
func newRunID() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "run_" + hex.EncodeToString(b[:]), nil
}
