package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
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
// (validation, policy, redaction), run by an in-process worker, or with
// --server by a running `airlock serve`.
func runExec(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := command{"exec", stderr}
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf stackFlags
	var lf limitFlags
	sf.register(fs, true, 0)
	lf.register(fs)
	asJSON := fs.Bool("json", false, "print the whole result as JSON")
	var mount, server, key, env string
	registerMount(fs, &mount)
	registerEnvironment(fs, &env)
	registerServer(fs, &server, &key, "", "to run the call on (empty: run here)")
	verbose := fs.Bool("v", false, "log to stderr")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fmt.Fprintln(stderr, "usage: airlock exec [flags] run_python|execute_shell [CODE]   (CODE from stdin when absent)\n       airlock exec [flags] fetch_url URL")
		return 2
	}
	tool := fs.Arg(0)
	code, err := execCode(fs, stdin)
	if err != nil {
		return cmd.fail(2, err)
	}
	lim, err := lf.limits()
	if err != nil {
		return cmd.fail(2, err)
	}
	rawArgs, err := codeArguments(tool, code, lim)
	if err != nil {
		return cmd.fail(2, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if server != "" {
		if mount != "" || sf.secretsFile != "" {
			return cmd.failf(2, "--mount and --secrets-file are this host's and cannot be sent to --server; the server's operator allows input folders and configures secrets")
		}
		return execRemote(ctx, server, key, client.ToolCall{Name: tool, Arguments: json.RawMessage(rawArgs), Limits: remoteLimits(lim), Environment: env}, *asJSON, stdout, stderr)
	}
	if mount != "" {
		if abs, err := filepath.Abs(mount); err == nil {
			mount = abs
		}
	}
	if err := sf.loadSecrets(); err != nil {
		return cmd.fail(2, err)
	}
	st, err := buildStack(ctx, &sf, logger(stderr, *verbose))
	if err != nil {
		return cmd.fail(1, err)
	}
	defer st.close()
	if sf.pool > 0 && st.engine != nil {
		if err := st.engine.WaitWarm(ctx); err != nil {
			return cmd.fail(1, err)
		}
	}
	closeEnvs, err := st.useLocalEnvironments(env)
	if err != nil {
		return cmd.fail(1, err)
	}
	defer closeEnvs()
	res := st.disp.Run(ctx, dispatcher.Call{Name: tool, Arguments: rawArgs, Limits: lim, Mount: mount, Owner: "cli", Caller: "cli",
		Environment: env, Environments: []string{dispatcher.AllEnvironments}})
	return printCall(res, *asJSON, stdout, stderr)
}

// execCode is the code `airlock exec` runs: its second argument, or stdin.
func execCode(fs *flag.FlagSet, stdin io.Reader) (string, error) {
	if fs.NArg() == 2 {
		return fs.Arg(1), nil
	}
	b, err := io.ReadAll(io.LimitReader(stdin, 1<<20))
	if err != nil {
		return "", fmt.Errorf("read code from stdin: %w", err)
	}
	return string(b), nil
}

// codeArguments are the arguments of a code tool call from the CLI: the
// code and, when the limits name one, timeout_seconds.
func codeArguments(tool, code string, lim core.Limits) ([]byte, error) {
	if tool == dispatcher.ToolFetchURL {
		return json.Marshal(map[string]any{"url": strings.TrimSpace(code)})
	}
	arg, ok := toolArg[tool]
	if !ok {
		return nil, fmt.Errorf("unknown tool %q: use run_python or execute_shell", tool)
	}
	args := map[string]any{arg: code}
	if lim.Timeout > 0 {
		args["timeout_seconds"] = int((lim.Timeout + time.Second - 1) / time.Second)
	}
	return json.Marshal(args)
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
	} else if res.Status == dispatcher.StatusOK {
		// An answer made in Airlock (fetch_url): its text.
		fmt.Fprintln(stdout, res.Content)
		return 0
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
	cmd := command{"exec", stderr}
	c, err := client.New(url, client.WithAPIKey(key))
	if err != nil {
		return cmd.failf(2, "--server: %w", err)
	}
	res, err := c.CallTool(ctx, call)
	if err != nil {
		return cmd.failAPI(err)
	}
	r := res.Result
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
	} else if call.Name == dispatcher.ToolFetchURL && r.Status == core.StatusOK {
		// An answer made in Airlock, not a sandbox: its text, as locally.
		fmt.Fprintln(stdout, res.Message.Content)
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
