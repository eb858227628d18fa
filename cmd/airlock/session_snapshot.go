package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/airlock-dev/airlock/client"
)

// sessionSnapshotCommands are the `airlock session` subcommands that act
// on a running server's sessions (issue 30).
var sessionSnapshotCommands = map[string]string{
	"snapshot":  "snapshot SESSION_ID: save the session; prints {snapshot_id, bytes, skipped}",
	"restore":   "restore [--replay] SNAPSHOT_ID: open a session from a snapshot; prints the session",
	"fork":      "fork SESSION_ID: open a new session with the session's state; prints it",
	"export":    "export [-o FILE] SESSION_ID: write the session's call log as an .ipynb notebook",
	"list":      "list: print your sessions (state idle, busy or hibernated; environment; last use)",
	"snapshots": "snapshots: print your snapshots",
}

// runSessionSnapshot implements `airlock session list|snapshots|snapshot|
// restore|fork|export` against --server with --key.
func runSessionSnapshot(sub string, args []string, stdout, stderr io.Writer) int {
	cmd := command{"session " + sub, stderr}
	fs := flag.NewFlagSet("session "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: airlock session %s\n", sessionSnapshotCommands[sub])
		fs.PrintDefaults()
	}
	var server, key, out string
	registerServer(fs, &server, &key, "http://127.0.0.1:8080", "to act on")
	replay := false
	if sub == "restore" {
		fs.BoolVar(&replay, "replay", false, "replay the snapshot's call log instead of loading its namespace")
	}
	if sub == "export" {
		fs.StringVar(&out, "o", "", "file to write (default: SESSION_ID.ipynb; - for stdout)")
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	args0 := sub == "list" || sub == "snapshots"
	if (args0 && fs.NArg() != 0) || (!args0 && fs.NArg() != 1) {
		fs.Usage()
		return 2
	}
	id := fs.Arg(0)
	c, err := client.New(server, client.WithAPIKey(key), client.WithUserAgent("airlock-cli/1"))
	if err != nil {
		return cmd.fail(2, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var v any
	switch sub {
	case "list":
		v, err = c.ListSessions(ctx)
	case "snapshots":
		v, err = c.ListSnapshots(ctx)
	case "snapshot":
		v, err = c.SnapshotSession(ctx, id)
	case "restore":
		mode := "namespace"
		if replay {
			mode = "replay"
		}
		v, err = c.RestoreSession(ctx, id, mode)
	case "fork":
		v, err = c.ForkSession(ctx, id)
	case "export":
		var nb []byte
		if nb, err = c.ExportNotebook(ctx, id); err != nil {
			break
		}
		if out == "-" {
			_, err = stdout.Write(nb)
			break
		}
		if out == "" {
			out = id + ".ipynb"
		}
		if err = os.WriteFile(out, nb, 0o644); err == nil {
			fmt.Fprintf(stderr, "wrote %s (%d bytes)\n", out, len(nb))
		}
		if err != nil {
			return cmd.fail(1, err)
		}
		return 0
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
