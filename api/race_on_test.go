//go:build race

package api

// raceEnabled: the race detector slows JSON and hashing ~10×, so the
// heaviest load tests shrink their bodies (not their concurrency).
const raceEnabled = true
