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
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/client"
	"github.com/airlock-dev/airlock/internal/mcpserver"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/state"
)

// mcpOwner owns the sandboxes of `airlock mcp`.
const mcpOwner = "local"

// runMCP implements `airlock mcp`: an MCP server on stdin/stdout for a
// local host (Claude Desktop, VS Code, Cursor...), over the same embedded
// stack as `exec`, or with --server over a running `airlock serve` (its
// /v1 routes through the Go client). Logs go to stderr; stdout carries
// only the protocol.
func runMCP(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := command{"mcp", stderr}
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf stackFlags
	var lf limitFlags
	sf.register(fs, true, 1)
	lf.register(fs)
	var mount, server, key, env string
	registerMount(fs, &mount)
	registerEnvironment(fs, &env)
	registerServer(fs, &server, &key, "", "whose tools to serve (empty: run here)")
	verbose := fs.Bool("v", false, "debug logs on stderr")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: airlock mcp [--mount DIR | --server URL --key KEY] [--environment NAME] [--timeout 30s] [--memory 512m] [--cpus 1] [-v]")
		return 2
	}
	if server != "" && (mount != "" || sf.secretsFile != "") {
		return cmd.failf(2, "--mount and --secrets-file are this host's and cannot be sent to --server; the server's operator allows input folders and configures secrets")
	}
	lim, err := lf.limits()
	if err != nil {
		return cmd.fail(2, err)
	}
	if mount != "" {
		if mount, err = mountFolder(mount); err != nil {
			return cmd.fail(2, err)
		}
	}
	if err := sf.loadSecrets(); err != nil {
		return cmd.fail(2, err)
	}
	log := infoLogger(stderr, *verbose)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	be, closeBackend, err := mcpBackend(ctx, &sf, server, key, env, log)
	if err != nil {
		return cmd.fail(1, err)
	}
	defer closeBackend()
	srv, err := mcpserver.New(mcpserver.Config{Mount: mount, Limits: lim, Environment: env}, mcpserver.Deps{Backend: be, Logger: log})
	if err != nil {
		return cmd.fail(1, err)
	}
	defer closeWithin(srv.Close)
	t := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
	if err := srv.MCPServer(mcpOwner).Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, mcp.ErrConnectionClosed) {
		return cmd.fail(1, err)
	}
	return 0
}

// mcpBackend is the Backend of the MCP server: the server at url (--server)
// or a stack built here, whose sessions get the --egress policy (or the
// key's) like the REST API's and, with env set (--environment), resolve
// custom environments from `airlock env build`'s state store;
// closeBackend releases it.
func mcpBackend(ctx context.Context, sf *stackFlags, url, key, env string, log *slog.Logger) (be mcpserver.Backend, closeBackend func(), err error) {
	if url != "" {
		be, err := remoteBackend(ctx, url, key, log)
		if err != nil {
			return nil, nil, fmt.Errorf("--server: %w", err)
		}
		return be, func() {}, nil
	}
	// Snapshots (snapshot_session, fork_session) live in memory for as
	// long as this process: a host runs one `airlock mcp` per
	// conversation, and an on-disk store would be locked by the first.
	if sf.snapState == nil {
		sf.snapState, sf.snapConfig = state.NewMemory(time.Now), snapshots.DefaultConfig()
	}
	st, err := buildStack(ctx, sf, log)
	if err != nil {
		return nil, nil, err
	}
	closeEnvs := func() {}
	if env != "" {
		if closeEnvs, err = st.useLocalEnvironments(env); err != nil {
			st.close()
			return nil, nil, err
		}
	}
	opts := mcpserver.LocalOptions{Egress: sessionEgress(sf.keys, sf.egress.local)}
	opts.Snapshots = &mcpserver.SnapshotOptions{Snapshotter: st.client, Store: snapshots.New(sf.snapState, sf.snapConfig, nil)}
	if env != "" {
		opts.Environments = st.envs
	}
	if be, err = mcpserver.NewLocalWith(st.disp, st.client, opts); err != nil {
		closeEnvs()
		st.close()
		return nil, nil, err
	}
	return be, func() { st.close(); closeEnvs() }, nil
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
