// Command bench measures Airlock's speed side by side with plain Docker and
// between its own variants, in one run, and prints one markdown table per
// section (also written to .bench/results.md). It asserts nothing: it
// reports numbers and ratios. `make bench` runs it through scripts/bench.sh.
//
// Sections: 1 the sandbox engine through the CLI and a long-lived server,
// 2 the warm pool in-process, 3 the job queue (Redis and in-process), 4 the
// HTTP API under load, 5 MCP over streamable HTTP against the REST API, 6
// one-shot calls at the paces users create (an agent's call a second,
// back-to-back, concurrent clients, several owners), 7 tenancy (server RSS
// under concurrent maximum-size uploads from two keys, and the server CPU
// of a call returning the maximum number of artifacts), 8 a map batch of
// small items against the same items through /v1/tool-calls and a
// `docker run --rm` loop, with interactive latency and server RSS while it
// runs, 9 the state store (a warm session call with the embedded store and
// with Redis), 14 whole `airlock serve` binaries side by side (-airlock
// against BENCH_AIRLOCK_BASE): session and paced one-shot calls. Variants are
// interleaved; sections 1-5 start each measured call on a quiet machine (see
// quiet.go), section 6 deliberately does not. With -hog (BENCH_HOG=1) the
// chosen sections run a second time beside a two-core CPU hog and a last
// table puts the headline figures side by side (hog.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/sandbox"
)

func main() {
	os.Exit(run())
}

// run parses options, runs the chosen sections and writes the report.
func run() int {
	o := defaultOptions()
	o.register(flag.CommandLine)
	flag.Parse()
	if err := sandbox.CheckCgroupParent(o.cgroup); err != nil {
		logf("BENCH_CGROUP_PARENT (-cgroup-parent): %v", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	began := time.Now()
	if err := os.MkdirAll(o.workdir, 0o755); err != nil {
		logf("%v", err)
		return 1
	}
	rep := newReport(os.Stdout)
	q := newQuieter()
	rep.table(machineFacts(ctx, o, q))
	sections := []struct {
		key  string
		name string
		run  func(context.Context, options, *quieter, *report) error
	}{
		{"1", "sandbox engine", sectionExec},
		{"2", "warm pool", sectionPool},
		{"3", "queue", sectionQueue},
		{"4", "api", sectionAPI},
		{"5", "mcp", sectionMCP},
		{"6", "owners", sectionOwners},
		{"7", "tenancy", sectionTenancy},
		{"8", "batch", sectionBatch},
		{"9", "state store", sectionState},
		{"10", "jupyter", sectionJupyter},
		{"11", "snapshots", sectionSnapshots},
		{"12", "environments", sectionEnv},
		{"13", "session resume", sectionResume},
		{"14", "whole servers side by side", sectionServe},
	}
	failed := 0
	passes := 1
	if o.hog {
		passes = 2
	}
	for pass := 0; pass < passes && ctx.Err() == nil; pass++ {
		var h *hog
		if pass == 1 {
			var err error
			if h, err = startHog(2); err != nil {
				logf("%v", err)
				return 1
			}
			rep.hogPass = true
			logf("second pass beside a two-core CPU hog")
		}
		for _, s := range sections {
			if !o.wants(s.key) {
				continue
			}
			t := time.Now()
			logf("section %s (%s) starting", s.key, s.name)
			if err := s.run(ctx, o, q, rep); err != nil {
				failed++
				rep.line(fmt.Sprintf("**Section %s (%s) failed:** %v\n", s.key, s.name, err))
				logf("section %s failed: %v", s.key, err)
			}
			logf("section %s done in %s", s.key, time.Since(t).Round(time.Second))
			if ctx.Err() != nil {
				break
			}
		}
		if h != nil {
			h.stop()
		}
	}
	if len(rep.figs) > 0 {
		rep.hogPass = false
		rep.table(rep.figuresTable())
	}
	rep.line(fmt.Sprintf("Bench wall time: %s; quiet-machine waits that timed out: %d of %d.\n",
		time.Since(began).Round(time.Second), q.timeouts, q.waits))
	if err := writeResults(o.out, rep.String()); err != nil {
		logf("write %s: %v", o.out, err)
		return 1
	}
	logf("results written to %s", o.out)
	if failed > 0 {
		return 1
	}
	return 0
}

// writeResults stores the report, creating the folder.
func writeResults(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// logf prints progress to stderr, keeping stdout for the tables.
func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "bench %s: %s\n", time.Now().Format("15:04:05"), strings.TrimSpace(fmt.Sprintf(format, a...)))
}
