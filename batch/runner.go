package batch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// errLeaseHeld: another replica runs the batch.
var errLeaseHeld = errors.New("lease held by another replica")

// claim takes (or renews) the batch's lease; it fails with errLeaseHeld
// when another replica's lease is still valid.
func (m *Manager) claim(ctx context.Context, owner, id string) (Batch, error) {
	return m.update(ctx, owner, id, func(b *Batch) error {
		now := m.cfg.Now()
		if b.Lease != nil && b.Lease.Holder != m.cfg.Replica && now.Before(b.Lease.Until) {
			return errLeaseHeld
		}
		b.Lease = &Lease{Holder: m.cfg.Replica, Until: now.Add(m.cfg.LeaseTTL)}
		if b.Status == wire.BatchValidating {
			b.Status, b.InProgressAt = wire.BatchInProgress, now.Unix()
		}
		return nil
	})
}

// process runs the batch to its end while this replica holds the lease.
func (m *Manager) process(ctx context.Context, owner, id string) error {
	b, all, err := m.open(ctx, owner, id)
	if err != nil || b == nil {
		return err
	}
	r := m.newPass(ctx, owner, id, *b, all)
	defer r.stop()
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		r.progressLoop(ctx)
	}()
	r.runItems(ctx, b.Concurrency, all)
	r.stop()
	<-progressDone
	if ctx.Err() != nil || r.lost.Load() {
		return ctx.Err() // shutdown or lease lost: another replica resumes
	}
	return m.finish(ctx, owner, id, r.cancelled.Load())
}

// open claims the batch's lease and reads its items, backfilling lines and
// item events a dead runner left out. A nil batch means there is nothing
// to run here: another replica holds the lease, or the batch is gone or
// already final (then it leaves the index).
func (m *Manager) open(ctx context.Context, owner, id string) (*Batch, []versioned, error) {
	b, err := m.claim(ctx, owner, id)
	if errors.Is(err, errLeaseHeld) {
		return nil, nil, nil
	}
	if errors.Is(err, core.ErrNotFound) || core.CodeOf(err) == core.ErrNotFound {
		_ = m.store.Delete(ctx, state.Key{Kind: kindIndex, ID: id}, 0)
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if b.Status.Terminal() {
		return nil, nil, m.release(ctx, owner, id)
	}
	m.event(ctx, b)
	all, err := m.items(ctx, owner, id)
	if err != nil {
		return nil, nil, err
	}
	// Lines and item events missing from the logs (a runner died between
	// storing a result and logging it) are added once.
	if err := m.backfill(ctx, owner, id, all); err != nil {
		return nil, nil, err
	}
	return &b, all, nil
}

// finish settles the items left pending (cancelled or expired) and moves
// the batch to its final status.
func (m *Manager) finish(ctx context.Context, owner, id string, cancelled bool) error {
	all, err := m.items(ctx, owner, id)
	if err != nil {
		return err
	}
	now := m.cfg.Now()
	b, _, err := m.getBatch(ctx, owner, id)
	if err != nil {
		return err
	}
	expired := !cancelled && b.Status != wire.BatchCancelling && now.After(time.Unix(b.ExpiresAt, 0))
	cancelled = cancelled || b.Status == wire.BatchCancelling
	var c wire.BatchCounts
	c.Total = len(all)
	for i, v := range all {
		it := v.item
		if it.Status == ItemPending {
			if !cancelled && !expired {
				return fmt.Errorf("batch %s: item %d still pending", id, it.Index)
			}
			st, msg := ItemCancelled, "the batch was cancelled"
			if expired {
				st, msg = ItemExpired, "the batch's completion window passed"
			}
			it.Status = st
			it.Result = &wire.BatchLine{CustomID: it.CustomID, Status: st, Attempt: it.Attempt, CompletedAt: now.Unix(),
				Error: &wire.BatchError{Code: st, Message: msg}}
			if err := m.putItem(ctx, owner, id, &it, v.version); err != nil {
				return err // the next runner settles it
			}
			all[i].item = it
		}
		switch it.Status {
		case ItemCompleted:
			c.Completed++
		case ItemFailed:
			c.Failed++
		}
	}
	// Every finished item has its line and item event before the batch
	// is final.
	if err := m.backfill(ctx, owner, id, all); err != nil {
		return err
	}
	if !cancelled && !expired {
		b, err = m.update(ctx, owner, id, func(b *Batch) error {
			b.Status, b.FinalizingAt, b.RequestCounts = wire.BatchFinalizing, now.Unix(), c
			return nil
		})
		if err != nil {
			return err
		}
		m.event(ctx, b)
	}
	b, err = m.update(ctx, owner, id, func(b *Batch) error {
		b.RequestCounts, b.Lease = c, nil
		switch {
		case cancelled:
			b.Status, b.CancelledAt = wire.BatchCancelled, now.Unix()
		case expired:
			b.Status, b.ExpiredAt = wire.BatchExpired, now.Unix()
		default:
			b.Status, b.CompletedAt = wire.BatchCompleted, now.Unix()
		}
		return nil
	})
	if err != nil {
		return err
	}
	m.event(ctx, b)
	return m.release(ctx, owner, id)
}

// release drops the batch from the index of unfinished batches, unless
// a Retry reopened it meanwhile: only the index version read while the
// batch was final is deleted.
func (m *Manager) release(ctx context.Context, owner, id string) error {
	k := state.Key{Kind: kindIndex, ID: id}
	idx, err := m.store.Get(ctx, k)
	if errors.Is(err, state.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("batch: unindex %s: %w", id, err)
	}
	b, _, err := m.getBatch(ctx, owner, id)
	switch {
	case err == nil && !b.Status.Terminal():
		return nil
	case err != nil && core.CodeOf(err) != core.ErrNotFound:
		return fmt.Errorf("batch: unindex %s: %w", id, err)
	}
	if err := m.store.Delete(ctx, k, idx.Version); err != nil && !errors.Is(err, state.ErrConflict) {
		return fmt.Errorf("batch: unindex %s: %w", id, err)
	}
	return nil
}

func (m *Manager) progressEvery() time.Duration {
	d := m.cfg.LeaseTTL / 5
	if d > time.Second {
		d = time.Second
	}
	if d < 50*time.Millisecond {
		d = 50 * time.Millisecond
	}
	return d
}
