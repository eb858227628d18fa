package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/airlock-dev/airlock/client"
)

// remoteSub is an `airlock session` subcommand that acts on a running
// server's sessions through the Go client and prints its answer as JSON.
type remoteSub struct {
	usage string // after "usage: airlock session "
	verb  string // what --server's help says the server is for
	args  [2]int // the least and most positional arguments
	// flags registers the subcommand's own flags (nil: none).
	flags func(fs *flag.FlagSet)
	// run asks c; an answer of nil prints nothing.
	run func(ctx context.Context, c *client.Client, fs *flag.FlagSet, stdout, stderr io.Writer) (any, error)
}

// runRemoteSub parses args for sub against --server with --key, runs it
// and prints its answer.
func runRemoteSub(name string, sub remoteSub, args []string, stdout, stderr io.Writer) int {
	cmd := command{"session " + name, stderr}
	fs := flag.NewFlagSet("session "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: airlock session %s\n", sub.usage)
		fs.PrintDefaults()
	}
	var server, key string
	registerServer(fs, &server, &key, "http://127.0.0.1:8080", sub.verb)
	if sub.flags != nil {
		sub.flags(fs)
	}
	if code, ok := parseFlags(fs, flagsFirst(fs, args)); !ok {
		return code
	}
	if fs.NArg() < sub.args[0] || fs.NArg() > sub.args[1] {
		fs.Usage()
		return 2
	}
	c, err := client.New(server, client.WithAPIKey(key), client.WithUserAgent("airlock-cli/1"))
	if err != nil {
		return cmd.fail(2, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	v, err := sub.run(ctx, c, fs, stdout, stderr)
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			return cmd.fail(2, err)
		}
		return cmd.fail(1, err)
	}
	if v == nil {
		return 0
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return cmd.fail(1, err)
	}
	return 0
}

// flagsFirst moves fs's flags (and their values) in args before the
// positional arguments, so `export SID -o FILE` parses as `export -o
// FILE SID` (Go's flag package stops at the first positional argument);
// everything after "--", and an unknown -x after the first positional,
// stays positional.
func flagsFirst(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case len(a) > 1 && a[0] == '-':
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			f := fs.Lookup(name)
			if f == nil && len(pos) > 0 {
				pos = append(pos, a) // after the first positional an unknown -x is code (complete SID -x)
				continue
			}
			flags = append(flags, a)
			if f == nil || strings.Contains(a, "=") {
				continue // parseFlags names an unknown flag
			}
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !(ok && b.IsBoolFlag()) && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			pos = append(pos, a)
		}
	}
	return append(append(flags, "--"), pos...)
}

// usageError is a subcommand's refusal of its own arguments (exit code 2).
type usageError struct{ error }
