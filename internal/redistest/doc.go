// Package redistest starts private redis-server processes for tests: on a
// free loopback port, in a temporary folder, stopped at the end of the test.
// Without redis-server installed it skips the test, except in CI
// (CI=true), where a missing server is a failure.
package redistest
