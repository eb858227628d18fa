package main

import (
	"flag"
	"io"
	"os"
)

// envLookup reads the process environment (set per test with t.Setenv).
func envLookup(k string) string { return os.Getenv(k) }

// newTestFlagSet returns a silent FlagSet that returns parse errors.
func newTestFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}
