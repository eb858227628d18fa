package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/client"
)

// sessionKernelCommands are the `airlock session` subcommands that ask a
// running server's session kernel a question (issue 32).
var sessionKernelCommands = map[string]remoteSub{
	"complete": {
		usage: "complete SESSION_ID CODE [CURSOR]: completions and signature at CURSOR (code points; default the end); prints {matches, cursor_start, cursor_end, signatures}",
		verb:  "to ask", args: [2]int{2, 3},
		run: func(ctx context.Context, c *client.Client, fs *flag.FlagSet, _, _ io.Writer) (any, error) {
			code := fs.Arg(1)
			cursor := utf8.RuneCountInString(code)
			if fs.NArg() == 3 {
				n, err := strconv.Atoi(fs.Arg(2))
				if err != nil {
					return nil, usageError{fmt.Errorf("cursor %q is not a number", fs.Arg(2))}
				}
				cursor = n
			}
			return c.Complete(ctx, fs.Arg(0), code, cursor)
		},
	},
	"variables": {
		usage: "variables SESSION_ID: the session's globals with type, shape and size; prints {variables, more}",
		verb:  "to ask", args: [2]int{1, 1},
		run: func(ctx context.Context, c *client.Client, fs *flag.FlagSet, _, _ io.Writer) (any, error) {
			return c.Variables(ctx, fs.Arg(0))
		},
	},
}
