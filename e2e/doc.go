// Package e2e holds Airlock's end-to-end tests. They build the real
// airlock binary once and drive real processes: `airlock run`,
// `airlock serve` (in-process queue, or Redis with separate
// `airlock worker` processes), a private redis-server, Docker sandboxes and
// headless Chromium. The only fake is the model: agenttest's scripted
// OpenAI-compatible server, whose turns read the real tool results.
//
// Requirements: a Docker daemon with the airlock/python and airlock/shell
// images (`make images`), redis-server and Chromium (/usr/bin/chromium or
// $AIRLOCK_CHROMIUM). Without one of them a test skips, saying what is
// missing, except in CI (CI=true), where it fails. Screenshots go to
// $AIRLOCK_TEST_ARTIFACTS (default $TMPDIR/airlock-test-artifacts).
//
//	go test -race -count=1 ./e2e/
//
// The tests assert outcomes, never durations: every wait polls with a
// generous deadline that only guards against hangs.
package e2e
