package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/state"
)

// slots is the per-owner cap on running batch items, shared by every
// replica on the store. Slot i of an owner is the record (kindSlot, owner,
// "i"), created (IfVersion -1) with a TTL by the item that takes it,
// renewed (compare and swap on its own token) while the item runs and
// deleted when it ends. A replica that dies stops renewing, so its slots
// expire after ttl instead of leaking.
type slots struct {
	store state.Store
	limit int
	ttl   time.Duration
	poll  time.Duration
	log   *slog.Logger

	mu    sync.Mutex
	freed map[string]chan struct{} // owner → a token sent when one of its slots is released here
}

func newSlots(store state.Store, limit int, ttl time.Duration, log *slog.Logger) *slots {
	poll := ttl / 20
	if poll < 50*time.Millisecond {
		poll = 50 * time.Millisecond
	}
	if poll > 250*time.Millisecond {
		poll = 250 * time.Millisecond
	}
	return &slots{store: store, limit: limit, ttl: ttl, poll: poll, log: log, freed: map[string]chan struct{}{}}
}

func slotKey(owner string, i int) state.Key {
	return state.Key{Kind: kindSlot, Owner: owner, ID: fmt.Sprintf("%04d", i)}
}

// acquire takes one of owner's slots, waiting while all are held (by any
// replica) or the store is unreachable; it fails only when ctx ends. The
// returned release gives the slot back.
func (s *slots) acquire(ctx context.Context, owner string) (release func(), err error) {
	token := randomID("slot_")
	freed := s.freedOf(owner)
	for try := 0; ; try++ {
		key, version, err := s.tryTake(ctx, owner, token)
		if err == nil {
			return s.hold(owner, key, token, version), nil
		}
		if !errors.Is(err, errSlotsFull) && try%20 == 0 {
			s.log.Warn("batch: owner slot", "owner", owner, "try", try+1, "err", err)
		}
		wait := s.poll/2 + rand.N(s.poll)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-freed:
		case <-time.After(wait):
		}
	}
}

var errSlotsFull = errors.New("every slot of the owner is held")

// freedOf is owner's wake-up channel: a release here wakes one local
// waiter at once (the others, and waiters on other replicas, poll).
func (s *slots) freedOf(owner string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.freed[owner]
	if !ok {
		ch = make(chan struct{}, 1)
		s.freed[owner] = ch
	}
	return ch
}

// tryTake creates the first free slot record it can.
func (s *slots) tryTake(ctx context.Context, owner, token string) (state.Key, int64, error) {
	held, err := s.store.List(ctx, kindSlot, owner, "", s.limit+16)
	if err != nil {
		return state.Key{}, 0, fmt.Errorf("list slots: %w", err)
	}
	taken := make(map[string]bool, len(held))
	for _, it := range held {
		taken[it.Key.ID] = true
	}
	if len(taken) >= s.limit {
		return state.Key{}, 0, errSlotsFull
	}
	start := rand.N(s.limit)
	for n := 0; n < s.limit; n++ {
		k := slotKey(owner, (start+n)%s.limit)
		if taken[k.ID] {
			continue
		}
		v, err := s.store.Put(ctx, k, []byte(token), state.PutOptions{TTL: s.ttl, IfVersion: -1})
		if errors.Is(err, state.ErrConflict) {
			continue
		}
		if err != nil {
			return state.Key{}, 0, fmt.Errorf("take slot %s: %w", k.ID, err)
		}
		return k, v, nil
	}
	return state.Key{}, 0, errSlotsFull
}

// hold renews the slot every third of its TTL until release is called.
func (s *slots) hold(owner string, k state.Key, token string, version int64) func() {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(s.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), s.ttl/3)
			v, err := s.renew(ctx, k, token, version)
			cancel()
			if err != nil {
				s.log.Warn("batch: renew owner slot", "owner", owner, "slot", k.ID, "err", err)
				continue
			}
			version = v
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			<-done
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := s.drop(ctx, k, token); err != nil {
				s.log.Warn("batch: release owner slot", "owner", owner, "slot", k.ID, "err", err)
			}
			select {
			case s.freedOf(owner) <- struct{}{}:
			default:
			}
		})
	}
}

// renew extends the slot's TTL if it is still this token's; a slot lost
// (expired and taken by another) is re-created when free.
func (s *slots) renew(ctx context.Context, k state.Key, token string, version int64) (int64, error) {
	it, err := s.store.Get(ctx, k)
	switch {
	case errors.Is(err, state.ErrNotFound):
		return s.store.Put(ctx, k, []byte(token), state.PutOptions{TTL: s.ttl, IfVersion: -1})
	case err != nil:
		return 0, err
	case string(it.Value) != token:
		return 0, fmt.Errorf("slot %s expired and was taken by another item", k.ID)
	}
	return s.store.Put(ctx, k, []byte(token), state.PutOptions{TTL: s.ttl, IfVersion: it.Version})
}

// drop deletes the slot if it is still this token's.
func (s *slots) drop(ctx context.Context, k state.Key, token string) error {
	it, err := s.store.Get(ctx, k)
	if errors.Is(err, state.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if string(it.Value) != token {
		return nil
	}
	if err := s.store.Delete(ctx, k, it.Version); err != nil && !errors.Is(err, state.ErrConflict) {
		return err
	}
	return nil
}

// inUse counts owner's held slots (for tests and metrics).
func (s *slots) inUse(ctx context.Context, owner string) (int, error) {
	held, err := s.store.List(ctx, kindSlot, owner, "", s.limit+16)
	return len(held), err
}
