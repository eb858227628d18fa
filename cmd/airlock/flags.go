package main

import (
	"errors"
	"flag"
)

// parseFlags parses args with fs (ContinueOnError, output to stderr, where
// the flag package prints the bad flag and the usage). ok is false when the
// command must stop; code is then its exit code: 0 for -h/--help, 2 for a
// bad flag.
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		return 0, false
	default:
		return 2, false
	}
}
