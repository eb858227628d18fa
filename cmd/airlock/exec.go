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
	"path/filepath"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/client"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/wire"
)

// toolArg names the code argument of the tools `airlock exec` runs.
var toolArg = map[string]string{"run_python": "code", "execute_shell": "command"}

// runExec implements `airlock exec`: one tool call through the dispatcher
// (validation, policy, redaction), run by an in-process worker.
func runExec(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf stackFlags
	var lf limitFlags
	sf.register(fs, true, 0)
	lf.register(fs)
	asJSON := fs.Bool("json", false, "print the whole result as JSON")
	mount := fs.String("mount", "", "host folder mounted read-only at /workspace")
	verbose := fs.Bool("v", false, "log to stderr")
	server := fs.String("server", os.Getenv("AIRLOCK_SERVER"), "URL of a running `airlock serve` to run the call on (env AIRLOCK_SERVER); empty: run here")
	key := fs.String("key", os.Getenv("AIRLOCK_API_KEY"), "API key for --server (env AIRLOCK_API_KEY)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fmt.Fprintln(stderr, "usage: airlock exec [flags] run_python|execute_shell [CODE]   (CODE from stdin when absent)")
		return 2
	}
	tool := fs.Arg(0)
	arg, ok := toolArg[tool]
	if !ok {
		fmt.Fprintf(stderr, "airlock exec: unknown tool %q: use run_python or execute_shell\n", tool)
		return 2
	}
	code := fs.Arg(1)
	if fs.NArg() == 1 {
		b, err := io.ReadAll(io.LimitReader(stdin, 1<<20))
		if err != nil {
			fmt.Fprintf(stderr, "airlock exec: read code from stdin: %v\n", err)
			return 2
		}
		code = string(b)
	}
	lim, err := lf.limits()
	if err != nil {
		fmt.Fprintf(stderr, "airlock exec: %v\n", err)
		return 2
	}
	if *mount != "" {
		if abs, err := filepath.Abs(*mount); err == nil {
			*mount = abs
		}
	}
	callArgs := map[string]any{arg: code}
	if lim.Timeout > 0 {
		callArgs["timeout_seconds"] = int((lim.Timeout + time.Second - 1) / time.Second)
	}
	rawArgs, _ := json.Marshal(callArgs)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *server != "" {
		if *mount != "" {
			fmt.Fprintln(stderr, "airlock exec: --mount names a host folder and cannot be sent to --server; the server's operator allows input folders")
			return 2
		}
		return execRemote(ctx, *server, *key, client.ToolCall{Name: tool, Arguments: json.RawMessage(rawArgs), Limits: remoteLimits(lim)}, *asJSON, stdout, stderr)
	}
	st, err := buildStack(ctx, &sf, logger(stderr, *verbose))
	if err != nil {
		fmt.Fprintf(stderr, "airlock exec: %v\n", err)
		return 1
	}
	defer st.close()
	if sf.pool > 0 && st.engine != nil {
		if err := st.engine.WaitWarm(ctx); err != nil {
			fmt.Fprintf(stderr, "airlock exec: %v\n", err)
			return 1
		}
	}
	res := st.disp.Run(ctx, dispatcher.Call{Name: tool, Arguments: rawArgs, Limits: lim, Mount: *mount, Owner: "cli", Caller: "cli"})
	return printCall(res, *asJSON, stdout, stderr)
}

// printCall prints a tool call's outcome and returns the CLI's exit code.
func printCall(res dispatcher.Result, asJSON bool, stdout, stderr io.Writer) int {
	if res.Sandbox != nil && res.Status != dispatcher.StatusRejected {
		return printResult(*res.Sandbox, asJSON, stdout, stderr)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
	} else {
		fmt.Fprintf(stderr, "airlock: %s: %s\n", res.Status, res.Content)
	}
	if res.Status == dispatcher.StatusRejected || res.Status == dispatcher.StatusPendingApproval {
		return 126
	}
	return 1
}

// printResult prints a result and returns the exit code the CLI should end with.
func printResult(res core.Result, asJSON bool, stdout, stderr io.Writer) int {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
	} else {
		fmt.Fprint(stdout, res.Stdout)
		fmt.Fprint(stderr, res.Stderr)
		for _, a := range res.Artifacts {
			fmt.Fprintf(stderr, "[artifact %s %s %d bytes sha256:%s]\n", a.Name, a.MIME, a.Size, a.SHA256)
		}
		if res.Status != core.StatusOK && res.Status != core.StatusError {
			fmt.Fprintf(stderr, "airlock: %s: %s\n", res.Status, res.Message)
		}
	}
	return exitCode(res)
}

// exitCode is the program's exit code, or a fixed non-zero code for
// outcomes where the program did not exit on its own.
func exitCode(res core.Result) int {
	switch res.Status {
	case core.StatusOK:
		return 0
	case core.StatusError:
		if res.ExitCode > 0 && res.ExitCode < 256 {
			return res.ExitCode
		}
		return 1
	case core.StatusTimeout:
		return 124
	case core.StatusOOM:
		return 137
	case core.StatusOutputLimit:
		return 125
	default: // rejected
		return 126
	}
}

// execRemote runs call on the server at url with the Go client and prints
// it like a local call; a platform error (an *APIError) exits 1, or 75
// (EX_TEMPFAIL) when the server asked to retry later.
func execRemote(ctx context.Context, url, key string, call client.ToolCall, asJSON bool, stdout, stderr io.Writer) int {
	c, err := client.New(url, client.WithAPIKey(key))
	if err != nil {
		fmt.Fprintf(stderr, "airlock exec: --server: %v\n", err)
		return 2
	}
	res, err := c.CallTool(ctx, call)
	if err != nil {
		fmt.Fprintf(stderr, "airlock exec: %v\n", err)
		var ae *client.APIError
		if errors.As(err, &ae) && ae.Temporary() {
			if ae.RetryAfter > 0 {
				fmt.Fprintf(stderr, "airlock exec: the server asks to retry after %s\n", ae.RetryAfter)
			}
			return 75
		}
		return 1
	}
	r := res.Result
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
	} else {
		fmt.Fprint(stdout, r.Stdout)
		fmt.Fprint(stderr, r.Stderr)
		for _, a := range r.Artifacts {
			fmt.Fprintf(stderr, "[artifact %s %s %d bytes sha256:%s %s]\n", a.Name, a.MIME, a.Size, a.SHA256, a.URL)
		}
		if r.Status != core.StatusOK && r.Status != core.StatusError {
			fmt.Fprintf(stderr, "airlock: %s: %s\n", r.Status, res.Message.Content)
		}
	}
	if r.Status == wire.StatusPendingApproval {
		return 126
	}
	exit := 0
	if r.ExitCode != nil {
		exit = *r.ExitCode
	}
	return exitCode(core.Result{Status: core.Status(r.Status), ExitCode: exit})
}

// remoteLimits converts the limit flags to the API's limits (nil: none).
func remoteLimits(l core.Limits) *wire.Limits {
	if l == (core.Limits{}) {
		return nil
	}
	return &wire.Limits{MemoryBytes: l.Memory, CPUs: l.CPUs, Pids: l.Pids, TimeoutSeconds: l.Timeout.Seconds()}
}
