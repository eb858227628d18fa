package api

import (
	"math"
	"sync"
	"time"
)

// rateLimiter is a token bucket per owner (bounded by the key set) or per
// client address (bounded by pruning: full buckets are forgotten when the
// map passes maxBuckets, and a new address is refused while it stays full).
type rateLimiter struct {
	mu      sync.Mutex
	rate    float64 // tokens per second
	burst   float64
	now     func() time.Time
	buckets map[string]*bucket
}

// bucket is one owner's tokens at a moment.
type bucket struct {
	tokens float64
	last   time.Time
}

// newRateLimiter returns a limiter, or nil (allow all) when rate < 0.
func newRateLimiter(rate float64, burst int, now func() time.Time) *rateLimiter {
	if rate < 0 {
		return nil
	}
	return &rateLimiter{rate: rate, burst: float64(burst), now: now, buckets: map[string]*bucket{}}
}

// allow takes a token for owner. When none is left it returns false and the
// whole seconds until one will be.
func (l *rateLimiter) allow(owner string) (bool, int) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b, ok := l.buckets[owner]
	if !ok && len(l.buckets) >= maxBuckets {
		l.prune(now)
		if len(l.buckets) >= maxBuckets {
			return false, 1
		}
	}
	if !ok {
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[owner] = b
	}
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = math.Min(l.burst, b.tokens+el*l.rate)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := 1.0
	if l.rate > 0 {
		wait = math.Ceil((1 - b.tokens) / l.rate)
	}
	return false, int(math.Max(1, wait))
}

// maxBuckets bounds the buckets a limiter keeps.
const maxBuckets = 100_000

// prune drops buckets that have refilled to the burst: forgetting them
// changes nothing. Callers hold mu.
func (l *rateLimiter) prune(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
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
