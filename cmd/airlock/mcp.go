package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/client"
	"github.com/airlock-dev/airlock/internal/mcpserver"
)

// mcpOwner owns the sandboxes of `airlock mcp`.
const mcpOwner = "local"

// runMCP implements `airlock mcp`: an MCP server on stdin/stdout for a
// local host (Claude Desktop, VS Code, Cursor...), over the same embedded
// stack as `exec`, or with --server over a running `airlock serve` (its
// /v1 routes through the Go client). Logs go to stderr; stdout carries
// only the protocol.
func runMCP(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf stackFlags
	var lf limitFlags
	sf.register(fs, true, 1)
	lf.register(fs)
	mount := fs.String("mount", "", "host folder mounted read-only at /workspace in every session")
	server := fs.String("server", os.Getenv("AIRLOCK_SERVER"), "URL of a running `airlock serve` whose tools to serve (env AIRLOCK_SERVER); empty: run here")
	key := fs.String("key", os.Getenv("AIRLOCK_API_KEY"), "API key for --server (env AIRLOCK_API_KEY)")
	verbose := fs.Bool("v", false, "debug logs on stderr")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: airlock mcp [--mount DIR | --server URL --key KEY] [--timeout 30s] [--memory 512m] [--cpus 1] [-v]")
		return 2
	}
	if *server != "" && *mount != "" {
		fmt.Fprintln(stderr, "airlock mcp: --mount names a host folder and cannot be sent to --server; the server's operator allows input folders")
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
	var be mcpserver.Backend
	if *server != "" {
		if be, err = remoteBackend(ctx, *server, *key, log); err != nil {
			fmt.Fprintf(stderr, "airlock mcp: --server: %v\n", err)
			return 1
		}
	} else {
		st, err := buildStack(ctx, &sf, log)
		if err != nil {
			fmt.Fprintf(stderr, "airlock mcp: %v\n", err)
			return 1
		}
		defer st.close()
		if be, err = mcpserver.NewLocal(st.disp, st.client); err != nil {
			fmt.Fprintf(stderr, "airlock mcp: %v\n", err)
			return 1
		}
	}
	srv, err := mcpserver.New(mcpserver.Config{Mount: *mount, Limits: lim}, mcpserver.Deps{Backend: be, Logger: log})
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

// remoteBackend is the Backend of the server at url: its tools, calls,
// sessions and files through the Go client (see mcpserver.NewRemote).
func remoteBackend(ctx context.Context, url, key string, log *slog.Logger) (mcpserver.Backend, error) {
	c, err := client.New(url, client.WithAPIKey(key), client.WithUserAgent("airlock-mcp/1"))
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return mcpserver.NewRemote(sctx, c, mcpserver.RemoteConfig{Server: url, Logger: log})
}

// nopWriteCloser is a Writer whose Close does nothing (stdout stays open).
type nopWriteCloser struct{ io.Writer }

// Close implements io.Closer.
func (nopWriteCloser) Close() error { return nil }
