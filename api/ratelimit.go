package api

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// rateLimiter is a token bucket per owner (bounded by the key set) or per
// client address (bounded by pruning: full buckets are forgotten when the
// map passes maxBuckets, and a new address is refused while it stays full).
type rateLimiter struct {
	mu      sync.Mutex
	rate    rate.Limit // tokens per second
	burst   int
	now     func() time.Time
	buckets map[string]*rate.Limiter
}

// newRateLimiter returns a limiter, or nil (allow all) when perSecond < 0.
func newRateLimiter(perSecond float64, burst int, now func() time.Time) *rateLimiter {
	if perSecond < 0 {
		return nil
	}
	return &rateLimiter{rate: rate.Limit(perSecond), burst: burst, now: now, buckets: map[string]*rate.Limiter{}}
}

// allow takes a token for key. When none is left it returns false and the
// whole seconds until one will be.
func (l *rateLimiter) allow(key string) (bool, int) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= maxBuckets {
			l.prune(now)
			if len(l.buckets) >= maxBuckets {
				return false, 1
			}
		}
		b = rate.NewLimiter(l.rate, l.burst)
		l.buckets[key] = b
	}
	if b.AllowN(now, 1) {
		return true, 0
	}
	r := b.ReserveN(now, 1)
	defer r.CancelAt(now)
	if !r.OK() || l.rate == 0 {
		return false, 1
	}
	return false, int(math.Max(1, math.Ceil(r.DelayFrom(now).Seconds())))
}

// maxBuckets bounds the buckets a limiter keeps.
const maxBuckets = 100_000

// prune drops buckets that have refilled to the burst: forgetting them
// changes nothing. Callers hold mu.
func (l *rateLimiter) prune(now time.Time) {
	for k, b := range l.buckets {
		if b.TokensAt(now) >= float64(l.burst) {
			delete(l.buckets, k)
		}
	}
}

// gate bounds the number of simultaneous requests per owner.
type gate struct {
	mu  sync.Mutex
	max int
	n   map[string]int
}

// newGate returns a gate letting max requests per owner in at once.
func newGate(max int) *gate {
	return &gate{max: max, n: map[string]int{}}
}

// acquire lets owner in, or reports false when it is at its maximum.
func (g *gate) acquire(owner string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n[owner] >= g.max {
		return false
	}
	g.n[owner]++
	return true
}

// release lets owner's request out.
func (g *gate) release(owner string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n[owner]--; g.n[owner] <= 0 {
		delete(g.n, owner)
	}
}
