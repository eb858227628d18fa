package batch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// Dispatcher is the one entry every tool call goes through (the API's).
type Dispatcher interface {
	Run(ctx context.Context, call dispatcher.Call) dispatcher.Result
}

// Runs starts, follows and stops agent runs, for run items; nil refuses
// them.
type Runs interface {
	Start(req agent.RunRequest) (wire.Run, error)
	Get(owner, id string) (wire.Run, error)
	Cancel(owner, id string) error
}

// Config configures a Manager.
type Config struct {
	// Replica names this process in leases; empty picks a random name.
	Replica string
	// LeaseTTL is how long a lease lasts without renewal (default 15s).
	LeaseTTL time.Duration
	// Concurrency is the default per-batch concurrency (default 4).
	Concurrency int
	// MaxConcurrency bounds what a batch may ask for (default 32).
	MaxConcurrency int
	// OwnerConcurrency caps one owner's running items across all its
	// batches and every replica sharing the store (default 8): each
	// running item holds one of the owner's slot records (see slots.go).
	OwnerConcurrency int
	// SlotTTL is how long an owner slot outlives a replica that stopped
	// renewing it, e.g. after kill -9 (default 10s).
	SlotTTL time.Duration
	// MountInputs mounts a folder item (an input folder path) read-only at
	// /workspace as before archives existed. By default (false) the item
	// folder is packed into a tar on the host and sent as the call's
	// Archive, so the item can use the owner's warm containers; a folder
	// over core.MaxArchiveBytes or PackMaxEntries, or holding a link out
	// of it or a special file, is mounted instead and its result line
	// says why (input_mode "mount", input_note).
	MountInputs bool
	// PackMaxEntries bounds the entries of a packed item folder (default
	// 10000).
	PackMaxEntries int
	// ArchiveRetention keeps uploaded archives this long after the
	// batch's completion window, for retries (default 24h).
	ArchiveRetention time.Duration
	// MaxItems bounds the items of one batch (default 50000).
	MaxItems int
	// CompletionWindow is the default completion window (default 24h).
	CompletionWindow time.Duration
	// OutputBytes bounds stdout and stderr kept per line (default 64 KiB).
	OutputBytes int
	// ScanEvery is how often unfinished batches with expired leases are
	// looked for (default LeaseTTL/2).
	ScanEvery time.Duration
	// Artifacts keeps a result's artifacts and returns references; nil
	// keeps metadata only.
	Artifacts func(owner string, arts []core.Artifact) []wire.Artifact
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Replica == "" {
		c.Replica = randomID("replica_")
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 15 * time.Second
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if c.MaxConcurrency <= 0 {
		c.MaxConcurrency = 32
	}
	if c.OwnerConcurrency <= 0 {
		c.OwnerConcurrency = 8
	}
	if c.SlotTTL <= 0 {
		c.SlotTTL = 10 * time.Second
	}
	if c.PackMaxEntries <= 0 {
		c.PackMaxEntries = 10000
	}
	if c.ArchiveRetention <= 0 {
		c.ArchiveRetention = 24 * time.Hour
	}
	if c.MaxItems <= 0 {
		c.MaxItems = 50000
	}
	if c.CompletionWindow <= 0 {
		c.CompletionWindow = 24 * time.Hour
	}
	if c.OutputBytes <= 0 {
		c.OutputBytes = 64 << 10
	}
	if c.ScanEvery <= 0 {
		c.ScanEvery = c.LeaseTTL / 2
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

// Store kinds.
const (
	kindBatch  = "batch"
	kindIndex  = "batchidx"
	kindItem   = "batchitem"
	kindResult = "batchres"
	kindEvent  = "batchev"
	kindSlot   = "batchslot"
	kindArc    = "batcharc"
)

// Manager creates, runs and reports batches.
type Manager struct {
	cfg   Config
	store state.Store
	disp  Dispatcher
	runs  Runs

	mu     sync.Mutex
	active map[string]context.CancelFunc // batch id → its local runner
	// again holds the ids of running batches a Retry reopened:
	// their runner processes the batch once more before it ends.
	again map[string]bool
	slots *slots
	wg    sync.WaitGroup
	base  context.Context
}

// New builds a Manager; runs may be nil.
func New(cfg Config, store state.Store, disp Dispatcher, runs Runs) (*Manager, error) {
	if store == nil || disp == nil {
		return nil, errors.New("batch: store and dispatcher are required")
	}
	cfg = cfg.withDefaults()
	return &Manager{cfg: cfg, store: store, disp: disp, runs: runs,
		active: map[string]context.CancelFunc{}, again: map[string]bool{}, slots: newSlots(store, cfg.OwnerConcurrency, cfg.SlotTTL, cfg.Logger),
		base: context.Background()}, nil
}

// RunsAvailable reports whether run items can be accepted.
func (m *Manager) RunsAvailable() bool { return m.runs != nil }

// Run resumes unfinished batches whose lease expired (any replica's) until
// ctx is done, then waits for local runners to stop.
func (m *Manager) Run(ctx context.Context) {
	m.mu.Lock()
	m.base = ctx
	m.mu.Unlock()
	t := time.NewTicker(m.cfg.ScanEvery)
	defer t.Stop()
	for {
		m.scan(ctx)
		select {
		case <-ctx.Done():
			m.wg.Wait()
			return
		case <-t.C:
		}
	}
}

// scan starts a runner for every indexed batch not running here.
func (m *Manager) scan(ctx context.Context) {
	after := ""
	for {
		items, err := m.store.List(ctx, kindIndex, "", after, 500)
		if err != nil {
			m.cfg.Logger.Warn("batch: scan", "err", err)
			return
		}
		for _, it := range items {
			m.kick(string(it.Value), it.Key.ID)
		}
		if len(items) < 500 {
			return
		}
		after = items[len(items)-1].Key.ID
	}
}

// kick starts the local runner of a batch unless one runs.
func (m *Manager) kick(owner, id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.active[id]; !ok {
		m.startLocked(owner, id)
	}
}

// kickAgain starts the local runner of a batch, or has the running one
// process the batch once more before it ends: a runner may be past its
// last look at the batch (finishing it) when a Retry reopens it.
func (m *Manager) kickAgain(owner, id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.active[id]; ok {
		m.again[id] = true
		return
	}
	m.startLocked(owner, id)
}

// startLocked starts the local runner of a batch; m.mu is held.
func (m *Manager) startLocked(owner, id string) {
	ctx, cancel := context.WithCancel(m.base)
	m.active[id] = cancel
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel()
		for {
			if err := m.process(ctx, owner, id); err != nil && ctx.Err() == nil {
				m.cfg.Logger.Warn("batch: runner", "batch", id, "err", err)
			}
			if !m.endRunner(ctx, id) {
				return
			}
		}
	}()
}

// endRunner unregisters the runner of batch id, unless it was kicked again
// while it ran: then it reports true and the runner goes on.
func (m *Manager) endRunner(ctx context.Context, id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	again := m.again[id] && ctx.Err() == nil
	delete(m.again, id)
	if !again {
		delete(m.active, id)
	}
	return again
}

// Spec is a validated batch to create.
type Spec struct {
	Items            []Item
	Concurrency      int
	CompletionWindow time.Duration
	Limits           any
	Metadata         any
	// Archives are uploaded archives (tar, tar.gz or zip, each at most
	// core.MaxArchiveBytes, already checked by the caller); an item's
	// Archive n > 0 names Archives[n-1]. They are kept in the store under
	// the batch, never unpacked on the host.
	Archives [][]byte
}

// Create stores a batch and its items and starts it.
func (m *Manager) Create(ctx context.Context, owner string, spec Spec) (Batch, error) {
	if len(spec.Items) == 0 {
		return Batch{}, core.E("batch.create", core.ErrInvalid, errors.New("the batch has no items"))
	}
	if len(spec.Items) > m.cfg.MaxItems {
		return Batch{}, core.E("batch.create", core.ErrTooLarge, fmt.Errorf("the batch has %d items, over the limit of %d", len(spec.Items), m.cfg.MaxItems))
	}
	conc := spec.Concurrency
	if conc <= 0 {
		conc = m.cfg.Concurrency
	}
	if conc > m.cfg.MaxConcurrency {
		conc = m.cfg.MaxConcurrency
	}
	win := spec.CompletionWindow
	if win <= 0 {
		win = m.cfg.CompletionWindow
	}
	now := m.cfg.Now()
	b := Batch{Owner: owner, Batch: wire.Batch{ID: randomID("batch_"), Object: "batch", Status: wire.BatchValidating,
		RequestCounts: wire.BatchCounts{Total: len(spec.Items)}, CreatedAt: now.Unix(), ExpiresAt: now.Add(win).Unix(),
		CompletionWindow: win.String(), Concurrency: conc, Limits: spec.Limits, Metadata: spec.Metadata}}
	// Every item is checked before anything is stored: item records have
	// no TTL, so a refusal halfway would leave them behind for good.
	for _, it := range spec.Items {
		if it.Archive < 0 || it.Archive > len(spec.Archives) {
			return Batch{}, core.E("batch.create", core.ErrInvalid, fmt.Errorf("item %q names archive %d of %d", it.CustomID, it.Archive, len(spec.Archives)))
		}
	}
	for n, data := range spec.Archives {
		if err := m.putArchive(ctx, owner, b.ID, n+1, data, m.archiveTTL(b)); err != nil {
			return Batch{}, err
		}
	}
	for i := range spec.Items {
		it := spec.Items[i]
		it.Index, it.Status, it.Attempt = i, ItemPending, 1
		if err := m.putItem(ctx, owner, b.ID, &it, -1); err != nil {
			return Batch{}, err
		}
	}
	if err := m.putBatch(ctx, b, -1); err != nil {
		return Batch{}, err
	}
	if _, err := m.store.Put(ctx, state.Key{Kind: kindIndex, ID: b.ID}, []byte(owner), state.PutOptions{}); err != nil {
		return Batch{}, fmt.Errorf("batch: index %s: %w", b.ID, err)
	}
	m.event(ctx, b)
	m.kick(owner, b.ID)
	return b, nil
}

// Get returns owner's batch id.
func (m *Manager) Get(ctx context.Context, owner, id string) (Batch, error) {
	b, _, err := m.getBatch(ctx, owner, id)
	return b, err
}

// List returns owner's batches, newest first.
func (m *Manager) List(ctx context.Context, owner string, limit int) ([]Batch, error) {
	var out []Batch
	after := ""
	for {
		items, err := m.store.List(ctx, kindBatch, owner, after, 500)
		if err != nil {
			return nil, fmt.Errorf("batch: list: %w", err)
		}
		for _, it := range items {
			var s stored
			if json.Unmarshal(it.Value, &s) == nil {
				s.Batch.Owner = s.OwnerName
				s.Batch.Lease = nil
				out = append(out, s.Batch)
			}
		}
		if len(items) < 500 {
			break
		}
		after = items[len(items)-1].Key.ID
	}
	sortNewest(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Cancel asks the batch to stop: in-flight items are stopped, queued ones
// dropped. It answers the batch in its new state.
func (m *Manager) Cancel(ctx context.Context, owner, id string) (Batch, error) {
	b, err := m.update(ctx, owner, id, func(b *Batch) error {
		if b.Status.Terminal() || b.Status == wire.BatchCancelling {
			return nil
		}
		b.Status, b.CancellingAt = wire.BatchCancelling, m.cfg.Now().Unix()
		return nil
	})
	if err != nil {
		return Batch{}, err
	}
	m.event(ctx, b)
	m.mu.Lock()
	_, running := m.active[id]
	m.mu.Unlock()
	if !running && !b.Status.Terminal() {
		m.kick(owner, id)
	}
	return b, nil
}

// Retry reruns the failed items of a finished batch.
func (m *Manager) Retry(ctx context.Context, owner, id string) (Batch, error) {
	b, _, err := m.getBatch(ctx, owner, id)
	if err != nil {
		return Batch{}, err
	}
	if !b.Status.Terminal() {
		return Batch{}, core.E("batch.retry", core.ErrConflict, fmt.Errorf("batch %s is %s; retry a finished batch", id, b.Status))
	}
	items, err := m.items(ctx, owner, id)
	if err != nil {
		return Batch{}, err
	}
	used := map[int]bool{}
	for _, ri := range items {
		if ri.item.Status == ItemFailed && ri.item.Archive > 0 {
			used[ri.item.Archive] = true
		}
	}
	// The archives must outlive the retry's own completion window, which
	// starts now: their TTL is computed from the extended expiry.
	renewed := b
	renewed.ExpiresAt = m.retryExpiry(&b)
	if err := m.refreshArchives(ctx, renewed, used); err != nil {
		return Batch{}, err
	}
	n := 0
	for _, ri := range items {
		it := ri.item
		if it.Status != ItemFailed {
			continue
		}
		it.Status, it.Result = ItemPending, nil
		it.Attempt++
		if err := m.putItem(ctx, owner, id, &it, ri.version); err != nil {
			return Batch{}, err
		}
		n++
	}
	if n == 0 {
		return Batch{}, core.E("batch.retry", core.ErrConflict, fmt.Errorf("batch %s has no failed items", id))
	}
	b, err = m.update(ctx, owner, id, func(b *Batch) error {
		b.Status, b.Attempt = wire.BatchInProgress, b.Attempt+1
		b.CompletedAt, b.FinalizingAt, b.FailedAt = 0, 0, 0
		b.RequestCounts.Failed -= n
		if b.RequestCounts.Failed < 0 {
			b.RequestCounts.Failed = 0
		}
		b.ExpiresAt = m.retryExpiry(b)
		return nil
	})
	if err != nil {
		return Batch{}, err
	}
	if _, err := m.store.Put(ctx, state.Key{Kind: kindIndex, ID: id}, []byte(owner), state.PutOptions{}); err != nil {
		return Batch{}, fmt.Errorf("batch: index %s: %w", id, err)
	}
	m.event(ctx, b)
	m.kickAgain(owner, id)
	return b, nil
}

// retryExpiry is when a retried batch expires: a completion window from
// now, or its old expiry if that is later.
func (m *Manager) retryExpiry(b *Batch) int64 {
	return max(b.ExpiresAt, m.cfg.Now().Add(m.window(b)).Unix())
}

func (m *Manager) window(b *Batch) time.Duration {
	d, err := time.ParseDuration(b.CompletionWindow)
	if err != nil || d <= 0 {
		return m.cfg.CompletionWindow
	}
	return d
}

func randomID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
