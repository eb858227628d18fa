package main

import (
	"context"
	"flag"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// runWorker implements `airlock worker`: it takes sandbox jobs from the
// Redis queue and runs them on this host's Docker daemon until SIGTERM,
// then finishes the jobs in flight within the grace period.
func runWorker(args []string, stdout, stderr io.Writer) int {
	sf, verbose, code, ok := parseWorkerFlags(args, stderr)
	if !ok {
		return code
	}
	log := infoLogger(stderr, verbose)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := buildWorker(ctx, &sf, log)
	if err != nil {
		return command{"worker", stderr}.fail(1, err)
	}
	log.Info("airlock worker running", "queue", sf.queueName, "concurrency", sf.concurrency, "interactive_reserve", sf.interactiveReserve, "secrets", sf.secrets.Len())
	<-ctx.Done()
	log.Info("airlock worker stopping: finishing jobs in flight", "grace", sf.grace)
	st.close()
	return 0
}

// parseWorkerFlags parses the flags of `airlock worker` (environment
// fallbacks included) into the stack they build. ok false means stop with
// exit code code (the reason is printed).
func parseWorkerFlags(args []string, stderr io.Writer) (sf stackFlags, verbose bool, code int, ok bool) {
	cmd := command{"worker", stderr}
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf.registerWorker(fs)
	fs.BoolVar(&verbose, "v", false, "debug logs")
	if code, ok := parseFlags(fs, args); !ok {
		return sf, verbose, code, false
	}
	if err := sf.checkWorker(); err != nil {
		return sf, verbose, cmd.fail(2, err), false
	}
	if err := sf.loadSecrets(); err != nil {
		return sf, verbose, cmd.fail(2, err), false
	}
	return sf, verbose, 0, true
}
