package main

import (
	"errors"
	"flag"
	"fmt"
)

// parseFlags parses args with fs (ContinueOnError, output to stderr, where
// the flag package prints the bad flag and the usage). ok is false when the
// command must stop; code is then its exit code: 0 for -h/--help, 2 for a
// bad flag or a bad AIRLOCK_* number (checkNumberEnv).
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	if err == nil {
		if err = checkNumberEnv(fs); err != nil {
			fmt.Fprintln(fs.Output(), err)
			return 2, false
		}
	}
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		return 0, false
	default:
		return 2, false
	}
}
