package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/wire"
)

func batchKey(owner, id string) state.Key { return state.Key{Kind: kindBatch, Owner: owner, ID: id} }

func itemKey(owner, id string, index int) state.Key {
	return state.Key{Kind: kindItem, Owner: owner, ID: fmt.Sprintf("%s/%07d", id, index)}
}

func logKey(kind, owner, id string) state.Key { return state.Key{Kind: kind, Owner: owner, ID: id} }

func (m *Manager) putBatch(ctx context.Context, b Batch, ifVersion int64) error {
	data, err := json.Marshal(stored{Batch: b, OwnerName: b.Owner})
	if err != nil {
		return fmt.Errorf("batch: encode: %w", err)
	}
	if _, err := m.store.Put(ctx, batchKey(b.Owner, b.ID), data, state.PutOptions{IfVersion: ifVersion}); err != nil {
		return fmt.Errorf("batch: store %s: %w", b.ID, err)
	}
	return nil
}

func (m *Manager) getBatch(ctx context.Context, owner, id string) (Batch, int64, error) {
	it, err := m.store.Get(ctx, batchKey(owner, id))
	if errors.Is(err, state.ErrNotFound) {
		return Batch{}, 0, core.E("batch.get", core.ErrNotFound, fmt.Errorf("batch %s not found", id))
	}
	if err != nil {
		return Batch{}, 0, fmt.Errorf("batch: read %s: %w", id, err)
	}
	var s stored
	if err := json.Unmarshal(it.Value, &s); err != nil {
		return Batch{}, 0, core.E("batch.get", core.ErrInternal, fmt.Errorf("decode batch %s: %w", id, err))
	}
	s.Batch.Owner = s.OwnerName
	return s.Batch, it.Version, nil
}

// update applies fn to the latest batch record with compare-and-swap,
// retrying on conflicts.
func (m *Manager) update(ctx context.Context, owner, id string, fn func(*Batch) error) (Batch, error) {
	for {
		b, v, err := m.getBatch(ctx, owner, id)
		if err != nil {
			return Batch{}, err
		}
		if err := fn(&b); err != nil {
			return Batch{}, err
		}
		err = m.putBatch(ctx, b, v)
		if errors.Is(err, state.ErrConflict) {
			if ctx.Err() != nil {
				return Batch{}, ctx.Err()
			}
			continue
		}
		if err != nil {
			return Batch{}, err
		}
		return b, nil
	}
}

func (m *Manager) putItem(ctx context.Context, owner, id string, it *Item, ifVersion int64) error {
	data, err := json.Marshal(it)
	if err != nil {
		return fmt.Errorf("batch: encode item: %w", err)
	}
	if _, err := m.store.Put(ctx, itemKey(owner, id, it.Index), data, state.PutOptions{IfVersion: ifVersion}); err != nil {
		return fmt.Errorf("batch: store item %d of %s: %w", it.Index, id, err)
	}
	return nil
}

type versioned struct {
	item    Item
	version int64
}

// items reads every item of a batch, in index order.
func (m *Manager) items(ctx context.Context, owner, id string) ([]versioned, error) {
	var out []versioned
	prefix := id + "/"
	after := prefix
	for {
		page, err := m.store.List(ctx, kindItem, owner, after, 1000)
		if err != nil {
			return nil, fmt.Errorf("batch: list items of %s: %w", id, err)
		}
		for _, p := range page {
			if !strings.HasPrefix(p.Key.ID, prefix) {
				return out, nil
			}
			var it Item
			if err := json.Unmarshal(p.Value, &it); err != nil {
				return nil, fmt.Errorf("batch: decode item %s: %w", p.Key.ID, err)
			}
			out = append(out, versioned{it, p.Version})
		}
		if len(page) < 1000 {
			return out, nil
		}
		after = page[len(page)-1].Key.ID
	}
}

// appendLine appends a result line to the batch's results log.
func (m *Manager) appendLine(ctx context.Context, owner, id string, l *wire.BatchLine, total int) error {
	data, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("batch: encode line: %w", err)
	}
	if _, err := m.store.Append(ctx, logKey(kindResult, owner, id), data, 4*total+100, 0); err != nil {
		return fmt.Errorf("batch: append result of %s: %w", id, err)
	}
	return nil
}

// event appends a progress snapshot (the batch as answered, wire.Batch)
// to the batch's events log.
func (m *Manager) event(ctx context.Context, b Batch) {
	data, err := json.Marshal(b.Batch)
	if err != nil {
		return
	}
	if _, err := m.store.Append(ctx, logKey(kindEvent, b.Owner, b.ID), data, eventsMax(b.RequestCounts.Total), 0); err != nil {
		m.cfg.Logger.Warn("batch: event", "batch", b.ID, "err", err)
	}
}

func sortNewest(bs []Batch) {
	sort.SliceStable(bs, func(i, j int) bool {
		if bs[i].CreatedAt != bs[j].CreatedAt {
			return bs[i].CreatedAt > bs[j].CreatedAt
		}
		return bs[i].ID > bs[j].ID
	})
}
