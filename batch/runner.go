package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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
	b, err := m.claim(ctx, owner, id)
	if errors.Is(err, errLeaseHeld) {
		return nil
	}
	if errors.Is(err, core.ErrNotFound) || core.CodeOf(err) == core.ErrNotFound {
		_ = m.store.Delete(ctx, state.Key{Kind: kindIndex, ID: id}, 0)
		return nil
	}
	if err != nil {
		return err
	}
	if b.Status.Terminal() {
		return m.release(ctx, owner, id)
	}
	m.event(ctx, b)
	all, err := m.items(ctx, owner, id)
	if err != nil {
		return err
	}
	// Lines and item events missing from the logs (a runner died between
	// storing a result and logging it) are added once.
	if err := m.backfill(ctx, owner, id, all); err != nil {
		return err
	}
	var done, failed atomic.Int64
	var pending []versioned
	for _, v := range all {
		switch v.item.Status {
		case ItemPending:
			pending = append(pending, v)
		case ItemCompleted:
			done.Add(1)
		case ItemFailed:
			failed.Add(1)
		}
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var cancelled atomic.Bool
	expiry := time.Unix(b.ExpiresAt, 0)
	if b.Status == wire.BatchCancelling {
		cancelled.Store(true)
		stop()
	}

	// The progress loop: renews the lease, publishes counts, notices a
	// cancel from any replica and the completion window.
	progressDone := make(chan struct{})
	var lost atomic.Bool
	go func() {
		defer close(progressDone)
		t := time.NewTicker(m.progressEvery())
		defer t.Stop()
		var last wire.BatchCounts
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
			}
			c := wire.BatchCounts{Total: len(all), Completed: int(done.Load()), Failed: int(failed.Load())}
			nb, err := m.update(ctx, owner, id, func(b *Batch) error {
				if b.Lease != nil && b.Lease.Holder != m.cfg.Replica && m.cfg.Now().Before(b.Lease.Until) {
					return errLeaseHeld
				}
				b.Lease = &Lease{Holder: m.cfg.Replica, Until: m.cfg.Now().Add(m.cfg.LeaseTTL)}
				b.RequestCounts = c
				return nil
			})
			if errors.Is(err, errLeaseHeld) {
				lost.Store(true)
				stop()
				return
			}
			if err != nil {
				continue
			}
			if nb.Status == wire.BatchCancelling {
				cancelled.Store(true)
				stop()
			}
			if m.cfg.Now().After(expiry) {
				stop()
			}
			if c != last {
				m.event(ctx, nb)
				last = c
			}
		}
	}()

	work := make(chan versioned)
	var wg sync.WaitGroup
	for w := 0; w < b.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lease := newSlotLease(m.slots, owner)
			defer lease.drop()
			for {
				var v versioned
				var more bool
				select {
				case v, more = <-work:
				default: // no item ready: the slot is not held while waiting
					lease.drop()
					v, more = <-work
				}
				if !more {
					return
				}
				if runCtx.Err() != nil {
					lease.drop()
					continue
				}
				line, ok := m.runItem(runCtx, owner, id, v.item, lease)
				if !ok || (runCtx.Err() != nil && line.Failed()) {
					continue // stopped by cancel, expiry or shutdown: left pending
				}
				it := v.item
				it.Result = line
				it.Status = ItemCompleted
				if line.Failed() {
					it.Status = ItemFailed
				}
				// The CAS on the item record makes the result exactly once;
				// while the store is unreachable the write is retried.
				err := m.persist(ctx, "item", func() error { return m.putItem(ctx, owner, id, &it, v.version) })
				if err != nil {
					if !errors.Is(err, state.ErrConflict) && ctx.Err() == nil {
						m.cfg.Logger.Warn("batch: store item", "batch", id, "err", err)
					}
					continue
				}
				if err := m.persist(ctx, "line", func() error { return m.appendLine(ctx, owner, id, line, len(all)) }); err != nil {
					m.cfg.Logger.Warn("batch: append line", "batch", id, "err", err)
				}
				if err := m.persist(ctx, "event", func() error { return m.itemEvent(ctx, owner, id, line, len(all)) }); err != nil {
					m.cfg.Logger.Warn("batch: item event", "batch", id, "err", err)
				}
				if it.Status == ItemFailed {
					failed.Add(1)
				} else {
					done.Add(1)
				}
			}
		}()
	}
	for _, v := range pending {
		if runCtx.Err() != nil {
			break
		}
		select {
		case work <- v:
		case <-runCtx.Done():
		}
	}
	close(work)
	wg.Wait()
	stop()
	<-progressDone
	if ctx.Err() != nil || lost.Load() {
		return ctx.Err() // shutdown or lease lost: another replica resumes
	}
	return m.finish(ctx, owner, id, cancelled.Load())
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

// release drops the batch from the index of unfinished batches.
func (m *Manager) release(ctx context.Context, owner, id string) error {
	if err := m.store.Delete(ctx, state.Key{Kind: kindIndex, ID: id}, 0); err != nil {
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
