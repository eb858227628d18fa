#!/usr/bin/env bash
# Runs Airlock's side-by-side speed bench (make bench). Prerequisites: a
# Docker daemon, the airlock/python image (make images), redis-server, and
# bin/airlock (make build). Tables go to stdout and .bench/results.md.
#
# Knobs (environment): BENCH_N (samples per container variant, default 30),
# BENCH_LOOP (calls in the RSS loop, 100), BENCH_API_N (requests per API
# concurrency level, 100), BENCH_QUEUE_N (no-op jobs per queue backend, 500),
# BENCH_QUEUE_MS (ms per throughput run, 2000), BENCH_SECTIONS (e.g. 1,3),
# BENCH_HOG=1 (run the sections again beside a two-core CPU hog and print the
# headline figures side by side with the slowdown), BENCH_AIRLOCK_BASE (a
# baseline airlock binary that section 14 runs as a whole server beside
# BENCH_AIRLOCK's, calls alternating; BENCH_PPROF_0/1 give each a pprof
# listener), BENCH_CGROUP_PARENT (section 6's server and the in-process
# engines run their containers under this cgroup, --cgroup-parent; weight
# it beforehand, e.g. cgroup v1:
# mkdir /sys/fs/cgroup/cpu/airlock-bench; echo 4096 > .../cpu.shares).
# The server's Go profiles:
# AIRLOCK_PPROF=127.0.0.1:6060 on `airlock serve`.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "bench: $*" >&2; exit 1; }

GO=${GO:-go}
AIRLOCK=${BENCH_AIRLOCK:-bin/airlock}
[ -x "$AIRLOCK" ] || fail "$AIRLOCK missing: run make build (make bench does)"
docker info >/dev/null 2>&1 || fail "no Docker daemon reachable"
docker image inspect "${BENCH_PYTHON_IMAGE:-airlock/python:latest}" >/dev/null 2>&1 ||
	fail "image ${BENCH_PYTHON_IMAGE:-airlock/python:latest} missing: run make images"
command -v redis-server >/dev/null || fail "redis-server not installed (apt-get install redis-server)"

mkdir -p .bench bin
"$GO" build -o bin/airlock-bench ./bench

start=$(date +%s)
status=0
bin/airlock-bench -airlock "$AIRLOCK" -out .bench/results.md -workdir .bench || status=$?
# The egress proxy's figures (issue 29): a 100 MiB HTTPS download through
# the proxy against loopback, proxy CPU per MiB, the latency a small request
# gains, directly and through a door (BENCH_EGRESS=0 skips it), and a call
# with a policy cold and warm.
if [ "${BENCH_EGRESS:-1}" != 0 ]; then
	{ echo; echo '## Egress proxy (go test -bench EgressFigures ./egress/)'; echo; echo '```'
	  "$GO" test -run '^$' -bench EgressFigures -benchtime "${BENCH_EGRESS_N:-3}x" ./egress/ 2>&1 | grep -E 'Benchmark|ok|FAIL' || status=1
	  echo '```'; } | tee -a .bench/results.md
	# What the pool per egress policy saves: a call with a policy no call
	# used before (a container with a door boots) against the owner's next
	# call with it (warm), BENCH_EGRESS_POOL rounds.
	{ echo; echo '## Calls with an egress policy, cold and warm (go test -run TestEgressPoolFigures ./sandbox/)'; echo; echo '```'
	  AIRLOCK_BENCH_EGRESS_POOL="${BENCH_EGRESS_POOL:-10}" AIRLOCK_PYTHON_IMAGE="${BENCH_PYTHON_IMAGE:-airlock/python:latest}" \
	    "$GO" test -count=1 -v -run '^TestEgressPoolFigures$' ./sandbox/ 2>&1 | grep -E '^egress-pool|ok|FAIL' || status=1
	  echo '```'; } | tee -a .bench/results.md
fi
echo "bench: finished in $(( $(date +%s) - start ))s (exit $status); tables also in .bench/results.md" >&2
exit "$status"
