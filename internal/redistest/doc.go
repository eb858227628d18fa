// Package redistest starts private redis-server processes for tests: on a
// free loopback port, in a temporary folder, stopped at the end of the test.
// A test can restart one (Restart), stall it (Pause: SIGSTOP) or make it
// really full (Fill: maxmemory reached, noeviction). Without redis-server
// installed it skips the test, except in CI (CI=true), where a missing
// server is a failure.
package redistest
