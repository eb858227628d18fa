package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/environments"
)

// runSession implements `airlock session`: it opens one session and runs
// each snippet read from stdin in it, through the dispatcher. Snippets are
// separated by lines of "---"; a snippet whose first line is "%sh" runs as
// shell, else as Python.
func runSession(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if sub, ok := sessionSnapshotCommands[args[0]]; ok {
			return runRemoteSub(args[0], sub, args[1:], stdout, stderr)
		}
		if sub, ok := sessionKernelCommands[args[0]]; ok {
			return runRemoteSub(args[0], sub, args[1:], stdout, stderr)
		}
	}
	cmd := command{"session", stderr}
	fs := flag.NewFlagSet("session", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf stackFlags
	var lf limitFlags
	sf.register(fs, true, 0)
	lf.register(fs)
	verbose := fs.Bool("v", false, "log to stderr")
	var env string
	registerEnvironment(fs, &env)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	lim, err := lf.limits()
	if err != nil {
		return cmd.fail(2, err)
	}
	if err := sf.loadSecrets(); err != nil {
		return cmd.fail(2, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := buildStack(ctx, &sf, logger(stderr, *verbose))
	if err != nil {
		return cmd.fail(1, err)
	}
	defer st.close()
	closeEnvs, err := st.useLocalEnvironments(env)
	if err != nil {
		return cmd.fail(1, err)
	}
	defer closeEnvs()
	var target environments.Target
	if env != "" {
		if target, err = st.envs.Resolve(ctx, env, nil); err != nil {
			return cmd.fail(1, err)
		}
	}
	id, err := st.client.OpenSessionIn(ctx, "cli", target, lim, false)
	if err != nil {
		return cmd.fail(1, err)
	}
	defer closeWithin(func(ctx context.Context) error { return st.client.CloseSession(ctx, "cli", id) })
	fmt.Fprintf(stderr, "session %s open\n", id)
	code := 0
	run := func(snippet string) bool {
		tool := dispatcher.ToolRunPython
		if rest, ok := strings.CutPrefix(snippet, "%sh\n"); ok {
			tool, snippet = dispatcher.ToolExecuteShell, rest
		}
		if strings.TrimSpace(snippet) == "" {
			return true
		}
		raw, _ := codeArguments(tool, snippet, lim)
		res := st.disp.Run(ctx, dispatcher.Call{Name: tool, Arguments: raw, SessionID: id, Owner: "cli", Caller: "cli"})
		code = printCall(res, false, stdout, stderr)
		return res.Sandbox == nil || !res.Sandbox.SessionEnded
	}
	var cur strings.Builder
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if sc.Text() == "---" {
			if !run(cur.String()) {
				return code
			}
			cur.Reset()
			continue
		}
		cur.WriteString(sc.Text())
		cur.WriteByte('\n')
	}
	run(cur.String())
	return code
}
