package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

// eventsMax bounds a batch's events log: an item event per item and
// attempt, a progress snapshot per change of counts, and lifecycle ones.
func eventsMax(total int) int { return 3*total + 1000 }

// itemEvent logs that an item finished with line l.
func (m *Manager) itemEvent(ctx context.Context, owner, id string, l *wire.BatchLine, total int) error {
	data, err := json.Marshal(wire.BatchItemEvent{Object: wire.BatchItemEventObject, CustomID: l.CustomID, Status: l.Status, Failed: l.Failed(),
		DurationMS: l.DurationMS, Attempt: l.Attempt, CompletedAt: l.CompletedAt})
	if err != nil {
		return fmt.Errorf("batch: encode item event: %w", err)
	}
	if _, err := m.store.Append(ctx, logKey(kindEvent, owner, id), data, eventsMax(total), 0); err != nil {
		return fmt.Errorf("batch: append item event of %s: %w", id, err)
	}
	return nil
}

// loggedItemEvents lists the (custom_id, attempt) pairs with an item event.
func (m *Manager) loggedItemEvents(ctx context.Context, owner, id string) (map[string]bool, error) {
	seen := map[string]bool{}
	var after int64
	for {
		es, err := m.store.Range(ctx, logKey(kindEvent, owner, id), after, 1000, 0)
		if err != nil {
			return nil, fmt.Errorf("batch: read events of %s: %w", id, err)
		}
		for _, e := range es {
			after = e.Seq
			var ev wire.BatchItemEvent
			if json.Unmarshal(e.Data, &ev) == nil && ev.Object == wire.BatchItemEventObject {
				seen[lineID(ev.CustomID, ev.Attempt)] = true
			}
		}
		if len(es) < 1000 {
			return seen, nil
		}
	}
}

// backfill appends the result lines and item events missing for finished
// items: a runner that died (or lost the store) between storing an item's
// result and logging it leaves them out, and the next runner adds them.
func (m *Manager) backfill(ctx context.Context, owner, id string, all []versioned) error {
	lines, err := m.loggedLines(ctx, owner, id)
	if err != nil {
		return err
	}
	events, err := m.loggedItemEvents(ctx, owner, id)
	if err != nil {
		return err
	}
	for _, v := range all {
		l := v.item.Result
		if v.item.Status == ItemPending || l == nil {
			continue
		}
		k := lineID(l.CustomID, l.Attempt)
		if !lines[k] {
			if err := m.appendLine(ctx, owner, id, l, len(all)); err != nil {
				return err
			}
		}
		if !events[k] {
			if err := m.itemEvent(ctx, owner, id, l, len(all)); err != nil {
				return err
			}
		}
	}
	return nil
}

// retryable reports whether a store error may pass (the backend is
// unreachable or restarting).
func retryable(err error) bool {
	return errors.Is(err, state.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

// persist runs write until it succeeds, fails for good, or ctx ends,
// waiting between tries while the store is unreachable.
func (m *Manager) persist(ctx context.Context, what string, write func() error) error {
	for try := 1; ; try++ {
		err := write()
		if err == nil || !retryable(err) {
			return err
		}
		m.cfg.Logger.Warn("batch: store unreachable, retrying", "what", what, "try", try, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(time.Duration(try)*200*time.Millisecond, 2*time.Second)):
		}
	}
}
