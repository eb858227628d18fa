package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/approvals"
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
	// ErrClosed: the Manager is closed.

	ErrClosed = core.E("agent", core.ErrUnavailable, errors.New("manager closed"))
)

// ManagerConfig tunes a Manager. Zero values mean the defaults.
type ManagerConfig struct {
	// Loop configures every run.
	Loop Config
	// MaxFinished is how many finished runs are kept for Get and Events;
	// older ones are forgotten. 0 means 100.
	MaxFinished int
	// MaxActive bounds the runs in progress; Start answers ErrBusy beyond
	// it. 0 means 32.
	MaxActive int
	// Pending stores the approvals runs wait on (internal/approvals:
	// Memory or Redis); nil means a new in-memory store.
	Pending approvals.Store
	// Caller is dispatcher.Call.Caller for the audit log; "" means "agent".
	Caller string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Manager runs agent loops in the background for the HTTP API and the
// CLI. It is safe for concurrent use.
type Manager struct {
	cfg      ManagerConfig
	provider Provider
	logger   *slog.Logger
	loop     *loop
	ctx      context.Context
	stop     context.CancelFunc
	wg       sync.WaitGroup

	mu       sync.Mutex
	runs     map[string]*run
	finished []string // ids, oldest first
	active   int
	closed   bool
}

// NewManager returns a Manager running loops with tools against the
// provider (already resolved, see ResolveProvider). A provider that is not
// Configured still gives a Manager: Start then answers ErrNoModel.
func NewManager(cfg ManagerConfig, tools Tools, provider Provider, logger *slog.Logger) *Manager {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxFinished <= 0 {
		cfg.MaxFinished = 100
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
	cfg.Loop = cfg.Loop.withDefaults()
	red := newRedactor(provider.APIKey)
	logger = logger.With("component", "agent")
	l := &loop{
		cfg: cfg.Loop, tools: tools, store: pendingStore{cfg.Pending}, logger: logger, redact: red,
		caller: cfg.Caller, now: cfg.Now,
		model: newModel(provider, logger, red.String),
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Manager{cfg: cfg, provider: provider, logger: logger, loop: l, ctx: ctx, stop: stop, runs: map[string]*run{}}
}

// Configured reports whether a model and base URL are configured, so the
// UI can show a banner when they are not.
func (m *Manager) Configured() bool { return m.provider.Configured() }

// Start validates req and starts a run in the background.
func (m *Manager) Start(req RunRequest) (RunView, error) {
	if m.provider.BaseURL == "" || (req.Model == "" && m.provider.Model == "") {
		return RunView{}, ErrNoModel
	}
	if _, err := initialMessages("", req); err != nil {
		return RunView{}, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	id, err := newRunID()
	if err != nil {
		return RunView{}, fmt.Errorf("start run: %w", err)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return RunView{}, ErrClosed
	}
	if m.active >= m.cfg.MaxActive {
		m.mu.Unlock()
		return RunView{}, ErrBusy
	}
	ctx, cancel := context.WithCancelCause(m.ctx)
	r := &run{
		id: id, owner: req.Owner, req: req, created: m.cfg.Now(),
		log: newEventLog(m.cfg.Now, m.loop.redact), inbox: newMailbox(),
		cancel: cancel, done: make(chan struct{}), status: RunRunning,
	}
	m.runs[id] = r
	m.active++
	m.wg.Add(1)
	m.mu.Unlock()
	m.logger.Info("run started", "run", id, "owner", req.Owner, "provider", m.provider)
	go m.execute(ctx, cancel, r)
	return r.view(), nil
}

// execute runs r and records how it ended.
func (m *Manager) execute(ctx context.Context, cancel context.CancelCauseFunc, r *run) {
	defer m.wg.Done()
	defer cancel(nil)
	if b := m.cfg.Loop.WallBudget; b > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, b, errWallBudget)
		defer stop()
	}
	o := m.loop.execute(ctx, r)
	errMsg := ""
	if o.err != nil {
		errMsg = m.loop.redact.String(o.err.Error())
		r.log.emit(EventError, r.view().Steps, map[string]any{"message": errMsg, "status": o.status})
	}
	r.update(func(r *run) {
		r.status, r.final, r.errMsg, r.ended = o.status, m.loop.redact.String(o.final), errMsg, m.cfg.Now()
	})
	v := r.view()
	r.log.emit(EventRunFinished, v.Steps, map[string]any{
		"status": v.Status, "steps": v.Steps, "usage": v.Usage, "final_answer": v.FinalAnswer, "error": v.Error,
	})
	m.logger.Info("run finished", "run", r.id, "status", v.Status, "steps", v.Steps,
		"total_tokens", v.Usage.TotalTokens, "model_ms", v.Usage.ModelMS, "tool_ms", v.Usage.ToolMS)
	// Bookkeeping before the log closes: a reader who saw the stream end
	// finds the Manager already up to date.
	defer r.log.close()
	m.mu.Lock()
	close(r.done)
	m.active--
	m.finished = append(m.finished, r.id)
	for len(m.finished) > m.cfg.MaxFinished {
		delete(m.runs, m.finished[0])
		m.finished = m.finished[1:]
	}
	m.mu.Unlock()
}

// lookup finds owner's run id.
func (m *Manager) lookup(owner, id string) (*run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok || r.owner != owner {
		return nil, ErrNotFound
	}
	return r, nil
}

// Get returns a snapshot of owner's run id.
func (m *Manager) Get(owner, id string) (RunView, error) {
	r, err := m.lookup(owner, id)
	if err != nil {
		return RunView{}, err
	}
	return r.view(), nil
}

// Events replays the run's events with Seq > after, then follows live
// ones. The channel closes once the run has finished and every event is
// delivered, or when ctx is done; callers that stop reading must cancel
// ctx.
func (m *Manager) Events(ctx context.Context, owner, id string, after int) (<-chan Event, error) {
	r, err := m.lookup(owner, id)
	if err != nil {
		return nil, err
	}
	return r.log.follow(ctx, after), nil
}

// Cancel stops owner's run id: the model call and in-flight tool calls
// are cancelled. Cancelling a finished run does nothing.
func (m *Manager) Cancel(owner, id string) error {
	r, err := m.lookup(owner, id)
	if err != nil {
		return err
	}
	r.cancel(errCancelled)
	return nil
}

// Approve decides the pending approval token of owner's run runID: when
// approve is true the call runs (exactly once), otherwise the model is
// told it was rejected, with reason. ErrNotPending means the token is not
// waiting (unknown, already decided, or the run ended).
func (m *Manager) Approve(owner, runID, token string, approve bool, reason string) error {
	r, err := m.lookup(owner, runID)
	if err != nil {
		return err
	}
	if r.finished() {
		return ErrNotPending
	}
	if _, err := m.loop.store.Take(context.Background(), runID, token); err != nil {
		if errors.Is(err, ErrNotPending) {
			return err
		}
		return fmt.Errorf("take pending approval: %w", err)
	}
	r.inbox.push(decision{token: token, approve: approve, reason: reason})
	return nil
}

// Close cancels every run and waits for them to end, or for ctx.
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
