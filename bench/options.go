package main

import (
	"flag"
	"os"
	"strconv"
	"strings"
	"time"
)

// options are the bench's knobs; each flag defaults to an environment
// variable so that `make bench BENCH_N=10` style overrides work.
type options struct {
	airlock   string        // path of the airlock binary
	out       string        // results file
	workdir   string        // scratch folder for logs and redis data
	sections  string        // comma-separated section numbers, or "all"
	n         int           // samples per variant for container latencies
	loop      int           // sequential calls in the RSS loop of section 1
	apiN      int           // requests per concurrency level in section 4
	queueN    int           // no-op jobs per backend for queue latency
	mcpN      int           // interleaved pairs in sections 5 (MCP/REST) and 10 (Jupyter/REST)
	queueSpan time.Duration // measuring time per throughput run
	pythonImg string        // image for run_python
	batch     batchOptions  // section 8
	hog       bool          // run the sections again beside a two-core CPU hog
	cgroup    string        // cgroup parent of section 6's server and of the in-process engines ("": the daemon's default)
}

// defaultOptions reads the BENCH_* environment.
func defaultOptions() options {
	return options{
		airlock:   envStr("BENCH_AIRLOCK", "bin/airlock"),
		out:       envStr("BENCH_OUT", ".bench/results.md"),
		workdir:   envStr("BENCH_WORKDIR", ".bench"),
		sections:  envStr("BENCH_SECTIONS", "all"),
		n:         envInt("BENCH_N", 30),
		loop:      envInt("BENCH_LOOP", 100),
		apiN:      envInt("BENCH_API_N", 100),
		queueN:    envInt("BENCH_QUEUE_N", 500),
		mcpN:      envInt("BENCH_MCP_N", 50),
		queueSpan: time.Duration(envInt("BENCH_QUEUE_MS", 2000)) * time.Millisecond,
		pythonImg: envStr("BENCH_PYTHON_IMAGE", "airlock/python:latest"),
		batch:     defaultBatchOptions(),
		hog:       os.Getenv("BENCH_HOG") == "1",
		cgroup:    os.Getenv("BENCH_CGROUP_PARENT"),
	}
}

// register binds the options to flags.
func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.airlock, "airlock", o.airlock, "airlock binary (env BENCH_AIRLOCK)")
	fs.StringVar(&o.out, "out", o.out, "markdown results file (env BENCH_OUT)")
	fs.StringVar(&o.workdir, "workdir", o.workdir, "scratch folder for logs and redis data (env BENCH_WORKDIR)")
	fs.StringVar(&o.sections, "sections", o.sections, "sections to run, e.g. 1,3 (env BENCH_SECTIONS)")
	fs.IntVar(&o.n, "n", o.n, "samples per variant for container latencies (env BENCH_N)")
	fs.IntVar(&o.loop, "loop", o.loop, "sequential calls in the RSS loop (env BENCH_LOOP)")
	fs.IntVar(&o.apiN, "api-n", o.apiN, "requests per concurrency level (env BENCH_API_N)")
	fs.IntVar(&o.queueN, "queue-n", o.queueN, "no-op jobs per backend for queue latency (env BENCH_QUEUE_N)")
	fs.IntVar(&o.mcpN, "mcp-n", o.mcpN, "interleaved call pairs in sections 5 (MCP/REST) and 10 (Jupyter/REST) (env BENCH_MCP_N)")
	fs.DurationVar(&o.queueSpan, "queue-span", o.queueSpan, "time per throughput run (env BENCH_QUEUE_MS)")
	fs.StringVar(&o.pythonImg, "python-image", o.pythonImg, "run_python image (env BENCH_PYTHON_IMAGE)")
	fs.BoolVar(&o.hog, "hog", o.hog, "run the chosen sections again beside a two-core CPU hog and print the headline figures side by side (env BENCH_HOG=1)")
	fs.StringVar(&o.cgroup, "cgroup-parent", o.cgroup, "section 6's server (airlock serve --cgroup-parent) and the in-process engines (sections 2, 3, 9, 12) run their containers under this cgroup, weighted beforehand by the operator (env BENCH_CGROUP_PARENT)")
	o.batch.register(fs)
}

// wants reports whether section key is selected.
func (o options) wants(key string) bool {
	if o.sections == "" || o.sections == "all" {
		return true
	}
	for _, s := range strings.Split(o.sections, ",") {
		if strings.TrimSpace(s) == key {
			return true
		}
	}
	return false
}

// envStr returns the variable k, or def when unset or empty.
func envStr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// envInt returns the variable k as a positive int, or def.
func envInt(k string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(k)); err == nil && n > 0 {
		return n
	}
	return def
}
