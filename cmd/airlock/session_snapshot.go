package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/airlock-dev/airlock/client"
)

// sessionSnapshotCommands are the `airlock session` subcommands that list
// and act on a running server's sessions and snapshots (issue 30).
var sessionSnapshotCommands = map[string]remoteSub{
	"list": {
		usage: "list: print your sessions (state idle, busy or hibernated; environment; last use)",
		verb:  "to act on", args: [2]int{0, 0},
		run: func(ctx context.Context, c *client.Client, _ *flag.FlagSet, _, _ io.Writer) (any, error) {
			return c.ListSessions(ctx)
		},
	},
	"snapshots": {
		usage: "snapshots: print your snapshots",
		verb:  "to act on", args: [2]int{0, 0},
		run: func(ctx context.Context, c *client.Client, _ *flag.FlagSet, _, _ io.Writer) (any, error) {
			return c.ListSnapshots(ctx)
		},
	},
	"snapshot": {
		usage: "snapshot SESSION_ID: save the session; prints {snapshot_id, bytes, skipped}",
		verb:  "to act on", args: [2]int{1, 1},
		run: func(ctx context.Context, c *client.Client, fs *flag.FlagSet, _, _ io.Writer) (any, error) {
			return c.SnapshotSession(ctx, fs.Arg(0))
		},
	},
	"restore": {
		usage: "restore [--replay] SNAPSHOT_ID: open a session from a snapshot; prints the session",
		verb:  "to act on", args: [2]int{1, 1},
		flags: func(fs *flag.FlagSet) {
			fs.Bool("replay", false, "replay the snapshot's call log instead of loading its namespace")
		},
		run: func(ctx context.Context, c *client.Client, fs *flag.FlagSet, _, _ io.Writer) (any, error) {
			mode := "namespace"
			if fs.Lookup("replay").Value.String() == "true" {
				mode = "replay"
			}
			return c.RestoreSession(ctx, fs.Arg(0), mode)
		},
	},
	"fork": {
		usage: "fork SESSION_ID: open a new session with the session's state; prints it",
		verb:  "to act on", args: [2]int{1, 1},
		run: func(ctx context.Context, c *client.Client, fs *flag.FlagSet, _, _ io.Writer) (any, error) {
			return c.ForkSession(ctx, fs.Arg(0))
		},
	},
	"export": {
		usage: "export [-o FILE] SESSION_ID: write the session's call log as an .ipynb notebook",
		verb:  "to act on", args: [2]int{1, 1},
		flags: func(fs *flag.FlagSet) {
			fs.String("o", "", "file to write (default: SESSION_ID.ipynb; - for stdout)")
		},
		run: exportNotebook,
	},
}

// exportNotebook writes the session's notebook to -o (stdout for "-") and
// prints nothing else there.
func exportNotebook(ctx context.Context, c *client.Client, fs *flag.FlagSet, stdout, stderr io.Writer) (any, error) {
	id, out := fs.Arg(0), fs.Lookup("o").Value.String()
	nb, err := c.ExportNotebook(ctx, id)
	if err != nil {
		return nil, err
	}
	if out == "-" {
		_, err = stdout.Write(nb)
		return nil, err
	}
	if out == "" {
		out = id + ".ipynb"
	}
	if err := os.WriteFile(out, nb, 0o644); err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "wrote %s (%d bytes)\n", out, len(nb))
	return nil, nil
}
