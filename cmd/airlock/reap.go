package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"
)

// runReap implements `airlock reap`.
func runReap(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf sandboxFlags
	sf.register(fs, 0)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	eng, err := sf.engine(logger(stderr, false), nil)
	if err != nil {
		fmt.Fprintf(stderr, "airlock reap: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := eng.Reap(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "airlock reap: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "removed %d leftover containers\n", n)
	return 0
}
