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

	"github.com/airlock-dev/airlock/sandbox"
)

// toolLanguage maps the CLI's tool names to sandbox languages.
var toolLanguage = map[string]sandbox.Language{"run_python": sandbox.Python, "execute_shell": sandbox.Shell}

// runExec implements `airlock exec`.
func runExec(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf sandboxFlags
	var lf limitFlags
	sf.register(fs)
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
	lang, ok := toolLanguage[fs.Arg(0)]
	if !ok {
		fmt.Fprintf(stderr, "airlock exec: unknown tool %q: use run_python or execute_shell\n", fs.Arg(0))
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
	eng, err := sf.engine(logger(stderr, *verbose))
	if err != nil {
		fmt.Fprintf(stderr, "airlock exec: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if sf.pool > 0 {
		if err := eng.Start(ctx); err != nil {
			fmt.Fprintf(stderr, "airlock exec: %v\n", err)
			return 1
		}
	}
	res, err := eng.Exec(ctx, sandbox.Request{Language: lang, Code: code, Limits: lim, Mount: *mount, Owner: "cli"})
	closeCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = eng.Close(closeCtx)
	if err != nil {
		fmt.Fprintf(stderr, "airlock exec: %v\n", err)
		return 1
	}
	return printResult(res, *asJSON, stdout, stderr)
}

// printResult prints a result and returns the exit code the CLI should end with.
func printResult(res sandbox.Result, asJSON bool, stdout, stderr io.Writer) int {
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
		if res.Status != sandbox.StatusOK && res.Status != sandbox.StatusError {
			fmt.Fprintf(stderr, "airlock: %s: %s\n", res.Status, res.Message)
		}
	}
	return exitCode(res)
}

// exitCode is the program's exit code, or a fixed non-zero code for
// outcomes where the program did not exit on its own.
func exitCode(res sandbox.Result) int {
	switch res.Status {
	case sandbox.StatusOK:
		return 0
	case sandbox.StatusError:
		if res.ExitCode > 0 && res.ExitCode < 256 {
			return res.ExitCode
		}
		return 1
	case sandbox.StatusTimeout:
		return 124
	case sandbox.StatusOOM:
		return 137
	case sandbox.StatusOutputLimit:
		return 125
	default: // rejected
		return 126
	}
}
