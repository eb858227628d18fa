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
	"time"

	"github.com/airlock-dev/airlock/sandbox"
)

// runSession implements `airlock session`: it opens one session and runs
// each snippet read from stdin in it. Snippets are separated by lines of
// "---"; a snippet whose first line is "%sh" runs as shell, else as Python.
func runSession(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("session", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf sandboxFlags
	var lf limitFlags
	sf.register(fs)
	lf.register(fs)
	verbose := fs.Bool("v", false, "log to stderr")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	lim, err := lf.limits()
	if err != nil {
		fmt.Fprintf(stderr, "airlock session: %v\n", err)
		return 2
	}
	eng, err := sf.engine(logger(stderr, *verbose))
	if err != nil {
		fmt.Fprintf(stderr, "airlock session: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = eng.Close(c)
	}()
	if err := eng.Start(ctx); err != nil {
		fmt.Fprintf(stderr, "airlock session: %v\n", err)
		return 1
	}
	info, rej, err := eng.OpenSession(ctx, sandbox.Request{Owner: "cli", Limits: lim})
	if err != nil || rej != nil {
		if rej != nil {
			err = fmt.Errorf("%s", rej.Message)
		}
		fmt.Fprintf(stderr, "airlock session: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "session %s open (container %s)\n", info.ID, info.Container)
	code := 0
	run := func(snippet string) bool {
		lang := sandbox.Python
		if rest, ok := strings.CutPrefix(snippet, "%sh\n"); ok {
			lang, snippet = sandbox.Shell, rest
		}
		if strings.TrimSpace(snippet) == "" {
			return true
		}
		res, err := eng.SessionExec(ctx, sandbox.Request{SessionID: info.ID, Owner: "cli", Language: lang, Code: snippet, Limits: lim})
		if err != nil {
			fmt.Fprintf(stderr, "airlock session: %v\n", err)
			code = 1
			return false
		}
		code = printResult(res, false, stdout, stderr)
		return !res.SessionEnded
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
