package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/dispatcher"
)

// runSession implements `airlock session`: it opens one session and runs
// each snippet read from stdin in it, through the dispatcher. Snippets are
// separated by lines of "---"; a snippet whose first line is "%sh" runs as
// shell, else as Python.
func runSession(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("session", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf stackFlags
	var lf limitFlags
	sf.register(fs, true, 0)
	lf.register(fs)
	verbose := fs.Bool("v", false, "log to stderr")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	lim, err := lf.limits()
	if err != nil {
		fmt.Fprintf(stderr, "airlock session: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := buildStack(ctx, &sf, logger(stderr, *verbose))
	if err != nil {
		fmt.Fprintf(stderr, "airlock session: %v\n", err)
		return 1
	}
	defer st.close()
	id, err := st.client.OpenSession(ctx, "cli", lim)
	if err != nil {
		fmt.Fprintf(stderr, "airlock session: %v\n", err)
		return 1
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = st.client.CloseSession(c, "cli", id)
	}()
	fmt.Fprintf(stderr, "session %s open\n", id)
	code := 0
	run := func(snippet string) bool {
		tool, arg := "run_python", "code"
		if rest, ok := strings.CutPrefix(snippet, "%sh\n"); ok {
			tool, arg, snippet = "execute_shell", "command", rest
		}
		if strings.TrimSpace(snippet) == "" {
			return true
		}
		callArgs := map[string]any{arg: snippet}
		if lim.Timeout > 0 {
			callArgs["timeout_seconds"] = int((lim.Timeout + time.Second - 1) / time.Second)
		}
		raw, _ := json.Marshal(callArgs)
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
