#!/usr/bin/env bash
# Runs a command beside a CPU hog that keeps every core busy, as on a shared
# machine under load (issue 26: the suite must pass there).
#
# usage: scripts/busy.sh CMD [ARGS...]
#
# AIRLOCK_BUSY_HOGS busy loops run at normal priority (default: one per core,
# from nproc) for as long as CMD runs, and end with it whatever its exit;
# the script exits with CMD's status. Timing bounds in tests stretch by
# AIRLOCK_TEST_SCALE (internal/testscale); `make test-busy` sets it to 3
# unless it is set already.
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "usage: scripts/busy.sh CMD [ARGS...]" >&2
  exit 2
fi
n=${AIRLOCK_BUSY_HOGS:-$(nproc)}
case "$n" in
  '' | *[!0-9]*) echo "busy: AIRLOCK_BUSY_HOGS=$n is not a number" >&2; exit 2 ;;
esac

hogs=()
stop_hogs() {
  [ ${#hogs[@]} -eq 0 ] && return
  kill "${hogs[@]}" 2>/dev/null || true
  wait "${hogs[@]}" 2>/dev/null || true
  hogs=()
}
trap stop_hogs EXIT
trap 'stop_hogs; exit 130' INT TERM

for _ in $(seq "$n"); do
  bash -c 'while :; do :; done' &
  hogs+=("$!")
done
echo "busy: $n CPU hogs (pids ${hogs[*]}) beside: $*" >&2
status=0
"$@" || status=$?
stop_hogs
exit "$status"
