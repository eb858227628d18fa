package batch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// pass is one runner's processing of a batch while it holds the lease: the
// item workers and the progress loop share its counts and its stop.
type pass struct {
	m         *Manager
	owner, id string
	total     int
	expiry    time.Time
	// ctx is the items' context: stop ends it on a cancel, the completion
	// window, a lost lease or the end of the pass.
	ctx  context.Context
	stop context.CancelFunc

	done, failed atomic.Int64
	cancelled    atomic.Bool // the batch is being cancelled
	lost         atomic.Bool // another replica took the lease
}

// newPass starts a pass over the batch b with items all, counting the
// ones already finished.
func (m *Manager) newPass(ctx context.Context, owner, id string, b Batch, all []versioned) *pass {
	r := &pass{m: m, owner: owner, id: id, total: len(all), expiry: time.Unix(b.ExpiresAt, 0)}
	r.ctx, r.stop = context.WithCancel(ctx)
	for _, v := range all {
		switch v.item.Status {
		case ItemCompleted:
			r.done.Add(1)
		case ItemFailed:
			r.failed.Add(1)
		}
	}
	if b.Status == wire.BatchCancelling {
		r.cancelled.Store(true)
		r.stop()
	}
	return r
}

// counts are the pass's counts now.
func (r *pass) counts() wire.BatchCounts {
	return wire.BatchCounts{Total: r.total, Completed: int(r.done.Load()), Failed: int(r.failed.Load())}
}

// progressLoop renews the lease, publishes counts, and notices a cancel
// from any replica, the completion window and a lost lease, until the
// pass stops.
func (r *pass) progressLoop(ctx context.Context) {
	m := r.m
	t := time.NewTicker(m.progressEvery())
	defer t.Stop()
	var last wire.BatchCounts
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
		}
		c := r.counts()
		nb, err := m.update(ctx, r.owner, r.id, func(b *Batch) error {
			if b.Lease != nil && b.Lease.Holder != m.cfg.Replica && m.cfg.Now().Before(b.Lease.Until) {
				return errLeaseHeld
			}
			b.Lease = &Lease{Holder: m.cfg.Replica, Until: m.cfg.Now().Add(m.cfg.LeaseTTL)}
			b.RequestCounts = c
			return nil
		})
		if errors.Is(err, errLeaseHeld) {
			r.lost.Store(true)
			r.stop()
			return
		}
		if err != nil {
			continue
		}
		if nb.Status == wire.BatchCancelling {
			r.cancelled.Store(true)
			r.stop()
		}
		if m.cfg.Now().After(r.expiry) {
			r.stop()
		}
		if c != last {
			m.event(ctx, nb)
			last = c
		}
	}
}

// runItems feeds the pending items of all to concurrency workers and waits
// for them; items the pass stops before stay pending.
func (r *pass) runItems(ctx context.Context, concurrency int, all []versioned) {
	work := make(chan versioned)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() { r.worker(ctx, work) })
	}
	for _, v := range all {
		if v.item.Status != ItemPending {
			continue
		}
		if r.ctx.Err() != nil {
			break
		}
		select {
		case work <- v:
		case <-r.ctx.Done():
		}
	}
	close(work)
	wg.Wait()
}

// worker runs items from work one after the other, keeping its owner slot
// across them while they come back to back.
func (r *pass) worker(ctx context.Context, work <-chan versioned) {
	lease := newSlotLease(r.m.slots, r.owner)
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
		if r.ctx.Err() != nil {
			lease.drop()
			continue
		}
		r.runOne(ctx, v, lease)
	}
}

// runOne runs one item and records its result: the item record first
// (compare and swap, so the result is recorded exactly once), then its
// line and item event. An item stopped by the pass stays pending.
func (r *pass) runOne(ctx context.Context, v versioned, lease *slotLease) {
	m := r.m
	line, ok := m.runItem(r.ctx, r.owner, r.id, v.item, lease)
	if !ok || (r.ctx.Err() != nil && line.Failed()) {
		return // stopped by cancel, expiry or shutdown: left pending
	}
	it := v.item
	it.Result = line
	it.Status = ItemCompleted
	if line.Failed() {
		it.Status = ItemFailed
	}
	// While the store is unreachable the writes are retried.
	err := m.persist(ctx, "item", func() error { return m.putItem(ctx, r.owner, r.id, &it, v.version) })
	if err != nil {
		if !errors.Is(err, state.ErrConflict) && ctx.Err() == nil {
			m.cfg.Logger.Warn("batch: store item", "batch", r.id, "err", err)
		}
		return
	}
	if err := m.persist(ctx, "line", func() error { return m.appendLine(ctx, r.owner, r.id, line, r.total) }); err != nil {
		m.cfg.Logger.Warn("batch: append line", "batch", r.id, "err", err)
	}
	if err := m.persist(ctx, "event", func() error { return m.itemEvent(ctx, r.owner, r.id, line, r.total) }); err != nil {
		m.cfg.Logger.Warn("batch: item event", "batch", r.id, "err", err)
	}
	if it.Status == ItemFailed {
		r.failed.Add(1)
	} else {
		r.done.Add(1)
	}
}
