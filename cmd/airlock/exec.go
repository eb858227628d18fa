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
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
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
	if err := fs.Parse(args); err != nil {
		return 2
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
