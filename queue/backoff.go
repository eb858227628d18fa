package queue

import (
	"math/rand/v2"
	"time"
)

// backoff yields exponentially growing, jittered delays from 50ms to 2s.
type backoff struct{ n int }

// next returns the next delay.
func (b *backoff) next() time.Duration {
	d := 50 * time.Millisecond << min(b.n, 5)
	b.n++
	d = min(d, 2*time.Second)
	return d/2 + rand.N(d/2+1)
}

// reset starts over after a success.
func (b *backoff) reset() { b.n = 0 }

// sleepOr sleeps for d unless stop closes first; it reports whether it
// slept the full time.
func sleepOr(d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	}
}
