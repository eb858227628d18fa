// Package loadtest measures POST /v1/tool-calls of a running Airlock
// server: requests per second, p50/p99 latency and the mix of status codes
// at several levels of concurrency. It refuses non-loopback targets, so it
// cannot be pointed at someone else's server by mistake.
//
// `make bench` can run it through the env-driven test in this package:
//
//	AIRLOCK_BENCH_URL=http://127.0.0.1:8080 AIRLOCK_BENCH_KEY=... \
//	AIRLOCK_BENCH_PID=$(pidof airlock) go test ./api/loadtest -run TestBench -v
package loadtest
