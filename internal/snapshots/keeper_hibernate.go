package snapshots

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// Hibernate saves session id of owner and frees its container; wait says
// whether to wait for a call in progress (else such a session is left
// alone and false returned).
func (k *Keeper) Hibernate(ctx context.Context, owner, id string, wait bool) (bool, error) {
	o := k.session(id)
	if o == nil || o.req.Owner != owner {
		return false, nil
	}
	if wait {
		o.gate.Lock()
	} else if !o.gate.TryLock() {
		return false, nil
	}
	defer o.gate.Unlock()
	if k.session(id) != o { // closed or hibernated meanwhile
		return false, nil
	}
	o.persist.Lock()
	defer o.persist.Unlock()
	if err := k.save(ctx, owner, id, o, k.store.cfg.MaxBytes, true, nil); err != nil {
		return false, fmt.Errorf("snapshots: hibernate %s: %w", id, err)
	}
	return true, nil
}

// RunHibernator hibernates sessions idle longer than HibernateAfter until
// ctx is done; it returns at once when hibernation is off.
func (k *Keeper) RunHibernator(ctx context.Context) {
	lister, ok := k.engine.(SessionLister)
	if k.res == nil || k.res.cfg.HibernateAfter <= 0 || !ok {
		return
	}
	every, after := hibernateTiming(k.res.cfg.HibernateAfter)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := k.now()
		live := lister.Sessions("")
		k.prune(live, now)
		for _, s := range live {
			if s.State == "busy" || now.Sub(s.LastUsed) < after {
				continue
			}
			if _, err := k.Hibernate(ctx, s.Owner, s.ID, false); err != nil {
				k.log.Warn("snapshots: idle session not hibernated", "session", s.ID, "err", err)
			}
		}
	}
}

// hibernateTiming is how often the hibernator looks at the sessions and
// how long one must have been idle to be saved, for hibernateAfter: a tick
// early, so a session is saved by hibernateAfter (the API's record of it
// expires idle then unless it is marked hibernated), and ticks of a
// twentieth of it (50 ms to 10 s), so none is saved much before: with
// quarter ticks a session set to hibernate after 5 s went at 3.75 s.
func hibernateTiming(hibernateAfter time.Duration) (every, idle time.Duration) {
	every = min(max(hibernateAfter/20, 50*time.Millisecond), 10*time.Second)
	return every, max(hibernateAfter-every, every)
}

// prune forgets the sessions opened before at that the engine no longer
// has (ended at their maximum life, say).
func (k *Keeper) prune(live []core.SessionInfo, at time.Time) {
	has := make(map[string]bool, len(live))
	for _, s := range live {
		has[s.ID] = true
	}
	k.res.mu.Lock()
	defer k.res.mu.Unlock()
	for id, o := range k.res.open {
		if !has[id] && o.remembered.Before(at) && !o.autoRunning {
			delete(k.res.open, id)
		}
	}
}

// HibernateAll saves and frees every session this Keeper opened, a few at
// a time, until ctx is done (a worker's shutdown); it returns how many
// were saved and how many failed or were left.
func (k *Keeper) HibernateAll(ctx context.Context) (saved, failed int) {
	if k.res == nil {
		return 0, 0
	}
	k.res.wg.Wait() // automatic snapshots first: they hold the gates briefly
	k.res.mu.Lock()
	type one struct{ owner, id string }
	var all []one
	for id, o := range k.res.open {
		all = append(all, one{o.req.Owner, id})
	}
	k.res.mu.Unlock()
	var mu sync.Mutex
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ok, err := k.Hibernate(ctx, s.owner, s.id, true)
			mu.Lock()
			defer mu.Unlock()
			if ok {
				saved++
				return
			}
			failed++
			if err != nil {
				k.log.Warn("snapshots: session not saved at shutdown", "session", s.id, "err", err)
			}
		})
	}
	wg.Wait()
	return saved, failed
}
