package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/client"
)

// sessionKernelCommands are the `airlock session` subcommands that ask a
// running server's session kernel a question (issue 32).
var sessionKernelCommands = map[string]string{
	"complete":  "complete SESSION_ID CODE [CURSOR]: completions and signature at CURSOR (code points; default the end); prints {matches, cursor_start, cursor_end, signatures}",
	"variables": "variables SESSION_ID: the session's globals with type, shape and size; prints {variables, more}",
}

// runSessionKernel implements `airlock session complete|variables`
// against --server with --key.
func runSessionKernel(sub string, args []string, stdout, stderr io.Writer) int {
	cmd := command{"session " + sub, stderr}
	fs := flag.NewFlagSet("session "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: airlock session %s\n", sessionKernelCommands[sub])
		fs.PrintDefaults()
	}
	var server, key string
	registerServer(fs, &server, &key, "http://127.0.0.1:8080", "to ask")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	want := map[string][2]int{"complete": {2, 3}, "variables": {1, 1}}[sub]
	if fs.NArg() < want[0] || fs.NArg() > want[1] {
		fs.Usage()
		return 2
	}
	c, err := client.New(server, client.WithAPIKey(key), client.WithUserAgent("airlock-cli/1"))
	if err != nil {
		return cmd.fail(2, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var v any
	switch sub {
	case "complete":
		code := fs.Arg(1)
		cursor := utf8.RuneCountInString(code)
		if fs.NArg() == 3 {
			if cursor, err = strconv.Atoi(fs.Arg(2)); err != nil {
				return cmd.fail(2, fmt.Errorf("cursor %q is not a number", fs.Arg(2)))
			}
		}
		v, err = c.Complete(ctx, fs.Arg(0), code, cursor)
	case "variables":
		v, err = c.Variables(ctx, fs.Arg(0))
	}
	if err != nil {
		return cmd.fail(1, err)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return cmd.fail(1, err)
	}
	return 0
}
