package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/internal/mcpserver"
)

// mcpOwner owns the sandboxes of `airlock mcp`.
const mcpOwner = "local"

// runMCP implements `airlock mcp`: an MCP server on stdin/stdout for a
// local host (Claude Desktop, VS Code, Cursor...), over the same embedded
// stack as `exec`. Logs go to stderr; stdout carries only the protocol.
func runMCP(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf stackFlags
	var lf limitFlags
	sf.register(fs, true, 1)
	lf.register(fs)
	mount := fs.String("mount", "", "host folder mounted read-only at /workspace in every session")
	verbose := fs.Bool("v", false, "debug logs on stderr")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: airlock mcp [--mount DIR] [--timeout 30s] [--memory 512m] [--cpus 1] [-v]")
		return 2
	}
	lim, err := lf.limits()
	if err != nil {
		fmt.Fprintf(stderr, "airlock mcp: %v\n", err)
		return 2
	}
	if *mount != "" {
		abs, err := filepath.Abs(*mount)
		if err != nil {
			fmt.Fprintf(stderr, "airlock mcp: --mount: %v\n", err)
			return 2
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			fmt.Fprintf(stderr, "airlock mcp: --mount %s is not a folder\n", *mount)
			return 2
		}
		*mount = abs
	}
	log := infoLogger(stderr)
	if *verbose {
		log = logger(stderr, true)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := buildStack(ctx, &sf, log)
	if err != nil {
		fmt.Fprintf(stderr, "airlock mcp: %v\n", err)
		return 1
	}
	defer st.close()
	srv, err := mcpserver.New(mcpserver.Config{Mount: *mount, Limits: lim},
		mcpserver.Deps{Dispatcher: st.disp, Executor: st.client, Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "airlock mcp: %v\n", err)
		return 1
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Close(c)
	}()
	t := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
	if err := srv.MCPServer(mcpOwner).Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, mcp.ErrConnectionClosed) {
		fmt.Fprintf(stderr, "airlock mcp: %v\n", err)
		return 1
	}
	return 0
}

// nopWriteCloser is a Writer whose Close does nothing (stdout stays open).
type nopWriteCloser struct{ io.Writer }

// Close implements io.Closer.
func (nopWriteCloser) Close() error { return nil }
