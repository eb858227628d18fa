package main

import "flag"

// batchOptions are section 8's knobs.
type batchOptions struct {
	items       int    // map items in the batch
	sample      int    // items of the sequential loops when not full
	full        bool   // run the sequential loops over every item
	concurrency int    // the batch's concurrency (0: the server's default)
	idleCycles  int    // interactive probe cycles before the batch
	shellImg    string // image of the docker run baseline
}

// defaultBatchOptions reads the BENCH_BATCH_* environment.
func defaultBatchOptions() batchOptions {
	return batchOptions{
		items:       envInt("BENCH_BATCH_N", 1000),
		sample:      envInt("BENCH_BATCH_SAMPLE", 50),
		full:        envStr("BENCH_BATCH_FULL", "") == "1",
		concurrency: envInt("BENCH_BATCH_CONCURRENCY", 0),
		idleCycles:  envInt("BENCH_BATCH_IDLE_CYCLES", 4),
		shellImg:    envStr("BENCH_SHELL_IMAGE", "airlock/shell:latest"),
	}
}

// register binds the options to flags.
func (o *batchOptions) register(fs *flag.FlagSet) {
	fs.IntVar(&o.items, "batch-n", o.items, "section 8: map items in the batch (env BENCH_BATCH_N)")
	fs.IntVar(&o.sample, "batch-sample", o.sample, "section 8: items the sequential tool-call and docker run loops run, extrapolated to all (env BENCH_BATCH_SAMPLE)")
	fs.BoolVar(&o.full, "batch-full", o.full, "section 8: run the sequential loops over every item, no extrapolation (env BENCH_BATCH_FULL=1; about 20 min per 1,000 items each on fuse-overlayfs)")
	fs.IntVar(&o.concurrency, "batch-concurrency", o.concurrency, "section 8: the batch's concurrency, 0 for the server's default (env BENCH_BATCH_CONCURRENCY)")
	fs.IntVar(&o.idleCycles, "batch-idle-cycles", o.idleCycles, "section 8: interactive probe cycles (5 paced rounds + 10 back-to-back calls) on the idle server (env BENCH_BATCH_IDLE_CYCLES)")
	fs.StringVar(&o.shellImg, "shell-image", o.shellImg, "execute_shell image: the servers the bench starts and section 8's docker run baseline (env BENCH_SHELL_IMAGE)")
}

// loopSize is how many items the sequential loops run.
func (o batchOptions) loopSize() int {
	if o.full || o.sample >= o.items {
		return o.items
	}
	return max(o.sample, 1)
}
