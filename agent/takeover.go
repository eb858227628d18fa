package agent

import (
	"context"
	"errors"
	"time"

	"github.com/airlock-dev/airlock/state"
)

// scan looks every ScanEvery for runs whose lease has expired (their
// driver died or was cut off) and takes them over, until the Manager
// closes.
func (m *Manager) scan() {
	defer m.wg.Done()
	t := time.NewTicker(m.cfg.ScanEvery)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
			m.scanOnce(m.ctx)
		}
	}
}

// scanOnce walks the index of active runs once and claims what it can.
func (m *Manager) scanOnce(ctx context.Context) {
	after := ""
	for ctx.Err() == nil {
		items, err := m.store.List(ctx, "runs-active", "", after, 100)
		if err != nil {
			if ctx.Err() == nil {
				m.logger.Warn("scan active runs", "err", err)
			}
			return
		}
		for _, it := range items {
			after = it.Key.ID
			if !m.room() {
				return
			}
			m.tryClaim(ctx, it.Key.ID, string(it.Value))
		}
		if len(items) < 100 {
			return
		}
	}
}

// room reports whether this Manager may drive one more run.
func (m *Manager) room() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.closed && len(m.runs) < m.cfg.MaxActive
}

// tryClaim takes owner's run id over when its lease has expired: a
// compare and swap on the record makes exactly one Manager win, which
// resumes the run from its checkpoint.
func (m *Manager) tryClaim(ctx context.Context, id, owner string) {
	if m.local(owner, id) != nil {
		return
	}
	rec, err := m.getRecord(ctx, owner, id)
	if errors.Is(err, ErrNotFound) {
		_ = m.store.Delete(ctx, activeKey(id), 0)
		return
	}
	if err != nil {
		m.logger.Warn("read active run", "run", id, "err", err)
		return
	}
	if rec.Status.Final() {
		_ = m.store.Delete(ctx, activeKey(id), 0)
		return
	}
	now := m.cfg.Now()
	if rec.LeaseUntil.After(now) {
		return
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	r := m.newRun(rec.ID, rec.Owner, rec.Request, rec.Created)
	r.status, r.steps, r.usage, r.pending, r.cancelReq = rec.Status, rec.Steps, rec.Usage, rec.Pending, rec.CancelRequested
	r.cp = rec.Checkpoint
	r.version = rec.Version
	m.runs[id] = r
	m.mu.Unlock()
	if err := m.persist(r); err != nil {
		m.forget(r)
		if !errors.Is(err, errLeaseLost) && !errors.Is(err, state.ErrConflict) {
			m.logger.Warn("claim run", "run", id, "err", err)
		}
		return
	}
	m.logger.Info("run taken over", "run", id, "owner", owner, "previous_holder", rec.Holder, "step", rec.Steps)
	m.launch(r)
}
