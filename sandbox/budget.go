package sandbox

import "sync"

// warmBudget accounts the engine's warm memory (Config.WarmMemoryBudget):
// the sum of Limits.Memory over the idle warm containers of every pool, the
// generic ones being booted for them and the ones being removed. Room is
// checked and taken in one step under its lock, so concurrent boots and
// releases, of one pool or of several, can never overrun it together. A
// container handed out for a call gives its room back at once; one let go
// only once it is gone, since until then it still holds its memory.
type warmBudget struct {
	mu    sync.Mutex
	limit int64
	used  int64
	// onChange, if set, learns the new use (under mu, so in order).
	onChange func(used int64)
}

// take reserves n bytes and reports whether they fit the budget; nothing
// is reserved when they do not.
func (w *warmBudget) take(n int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.used+n > w.limit {
		return false
	}
	w.used += n
	w.changed()
	return true
}

// exchange gives back out bytes and takes in bytes in one step, and
// reports whether in fitted; when it did not, out is given back all the same.
func (w *warmBudget) exchange(out, in int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	defer w.changed()
	if w.used-out+in > w.limit {
		w.used -= out
		return false
	}
	w.used += in - out
	return true
}

// give returns n bytes taken before.
func (w *warmBudget) give(n int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.used -= n
	w.changed()
}

// free is the room left (a hint: it may be gone by the time it is used).
func (w *warmBudget) free() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.limit - w.used
}

// inUse is what is taken.
func (w *warmBudget) inUse() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.used
}

func (w *warmBudget) changed() {
	if w.onChange != nil {
		w.onChange(w.used)
	}
}
