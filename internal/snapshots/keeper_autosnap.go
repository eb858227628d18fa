package snapshots

import (
	"context"
	"errors"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// autosnap saves session id after a call that ran, off the caller's path:
// once the session has had no call end for AutoQuiet (autoMaxWait at
// most), at most one at a time per session, a call ending meanwhile
// asking for one more after it; a namespace over AutoMaxBytes is not
// tried again for autoRetry. A save that fails because the session was
// closed meanwhile is not a warning.
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
	o.lastEnd = k.now()
	if o.unsaved.IsZero() {
		o.unsaved = o.lastEnd
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
			k.quiet(o)
			o.gate.Lock()
			o.persist.Lock()
			k.res.mu.Lock()
			o.unsaved = time.Time{}
			k.res.mu.Unlock()
			var err error
			if k.session(id) == o {
				// The gate is released once the snapshot has left the
				// sandbox: the next call need not wait for the store's
				// disk sync. What a kill -9 can lose is unchanged: the
				// snapshot being stored, as when it comes before a call
				// (README); resume records follow the order of the
				// snapshots (persist).
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				err = k.save(ctx, owner, id, o, min(k.res.cfg.AutoMaxBytes, k.store.cfg.MaxBytes), false, o.gate.Unlock)
				cancel()
			} else {
				o.gate.Unlock()
			}
			o.persist.Unlock()
			k.res.mu.Lock()
			// A session closed while its snapshot was taken (its container
			// gone, the link closed): nothing is left to save.
			closed := k.res.open[id] != o
			if err != nil {
				o.autoAgain = false
				if errors.Is(err, core.ErrTooLarge) || errors.Is(err, core.ErrInvalid) {
					o.tooBig = k.now().Add(autoRetry)
				}
			}
			if !o.autoAgain {
				o.autoRunning = false
				k.res.mu.Unlock()
				switch {
				case err == nil || errors.Is(err, core.ErrTooLarge) || errors.Is(err, core.ErrInvalid):
				case closed:
					k.log.Debug("snapshots: session closed while its automatic snapshot was taken", "session", id, "err", err)
				default:
					k.log.Warn("snapshots: session not saved after its call", "session", id, "err", err)
				}
				return
			}
			o.autoAgain = false
			k.res.mu.Unlock()
		}
	}()
}

// quiet waits until session o has had no call end for AutoQuiet, or
// autoMaxWait has passed since the first call its snapshot will hold.
func (k *Keeper) quiet(o *opened) {
	q := k.res.cfg.AutoQuiet
	if q <= 0 {
		return
	}
	for {
		k.res.mu.Lock()
		due := o.lastEnd.Add(q)
		if last := o.unsaved.Add(autoMaxWait); last.Before(due) {
			due = last
		}
		k.res.mu.Unlock()
		wait := due.Sub(k.now())
		if wait <= 0 {
			return
		}
		time.Sleep(wait)
	}
}

// WaitAutosnapshots waits for the automatic snapshots running now.
func (k *Keeper) WaitAutosnapshots() {
	if k.res != nil {
		k.res.wg.Wait()
	}
}
