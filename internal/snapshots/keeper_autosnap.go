package snapshots

import (
	"context"
	"errors"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// autosnap saves session id after a call that ran, off the caller's path:
// at most one at a time per session, a call ending meanwhile asking for
// one more after it; a namespace over AutoMaxBytes is not tried again for
// autoRetry.
func (k *Keeper) autosnap(owner, id string) {
	if k.res == nil || k.res.cfg.AutoMaxBytes <= 0 {
		return
	}
	o := k.session(id)
	if o == nil {
		return
	}
	k.res.mu.Lock()
	if k.now().Before(o.tooBig) {
		k.res.mu.Unlock()
		return
	}
	if o.autoRunning {
		o.autoAgain = true
		k.res.mu.Unlock()
		return
	}
	o.autoRunning = true
	k.res.wg.Add(1)
	k.res.mu.Unlock()
	go func() {
		defer k.res.wg.Done()
		for {
			o.gate.Lock()
			var err error
			if k.session(id) == o {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				err = k.save(ctx, owner, id, o, min(k.res.cfg.AutoMaxBytes, k.store.cfg.MaxBytes), false)
				cancel()
			}
			o.gate.Unlock()
			k.res.mu.Lock()
			if err != nil {
				o.autoAgain = false
				if errors.Is(err, core.ErrTooLarge) || errors.Is(err, core.ErrInvalid) {
					o.tooBig = k.now().Add(autoRetry)
				}
			}
			if !o.autoAgain {
				o.autoRunning = false
				k.res.mu.Unlock()
				if err != nil && !errors.Is(err, core.ErrTooLarge) && !errors.Is(err, core.ErrInvalid) {
					k.log.Warn("snapshots: session not saved after its call", "session", id, "err", err)
				}
				return
			}
			o.autoAgain = false
			k.res.mu.Unlock()
		}
	}()
}

// WaitAutosnapshots waits for the automatic snapshots running now.
func (k *Keeper) WaitAutosnapshots() {
	if k.res != nil {
		k.res.wg.Wait()
	}
}
