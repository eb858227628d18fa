package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// runAgentCmd builds the tool stack for `airlock run` and hands it to runAgent.
func runAgentCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// The stack's own flags come from the environment so that runAgent
	// keeps the command line to itself.
	var sf stackFlags
	sf.register(flag.NewFlagSet("run-stack", flag.ContinueOnError), true, 0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := buildStack(ctx, &sf, logger(stderr, false))
	if err != nil {
		fmt.Fprintf(stderr, "airlock run: %v\n", err)
		return 1
	}
	defer st.close()
	return runAgent(args, agentTools{st.disp}, stdout, stderr)
}
