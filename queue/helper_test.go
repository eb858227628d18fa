package queue

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// helperEnv selects the helper worker main in a re-executed test binary.
const helperEnv = "AIRLOCK_QUEUE_HELPER"

// envInt reads an integer environment variable with a default.
func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return v
	}
	return def
}

// envMS reads a duration in milliseconds from the environment, scaled by
// the test scale; def (already scaled) when unset.
func envMS(k string, def time.Duration) time.Duration {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return testscale.D(time.Duration(v) * time.Millisecond)
	}
	return def
}

// helperMain runs one Redis worker process until SIGTERM. Its handler
// follows the payload (see testHandler) and prints "started <id>
// <attempt>" before running a job; logs go to stdout as text.
func helperMain() int {
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelInfo}))
	q, err := NewRedis(Config{
		RedisURL:          os.Getenv("AQ_REDIS"),
		Name:              os.Getenv("AQ_NAME"),
		VisibilityTimeout: envMS("AQ_VIS_MS", testscale.D(time.Second)),
		LivenessTTL:       envMS("AQ_LIVE_MS", testscale.D(time.Second)),
		MaxDeliveries:     envInt("AQ_MAXDEL", 3),
	}, Deps{Logger: log})
	if err != nil {
		fmt.Println("helper:", err)
		return 2
	}
	defer q.Close()
	id := os.Getenv("AQ_ID")
	wcfg := WorkerConfig{
		ID: id, Concurrency: envInt("AQ_CONC", 1), Grace: testscale.D(5 * time.Second), ReadBlock: 200 * time.Millisecond,
	}
	if envs := os.Getenv("AQ_ENVS"); envs != "" { // the environments it holds
		wcfg.Environments = func() []string { return strings.Split(envs, ",") }
	}
	w, err := q.NewWorker(wcfg, testHandler(id, func(j Job) { fmt.Printf("started %s %d\n", j.ID, j.Attempt) }))
	if err != nil {
		fmt.Println("helper:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := w.Run(ctx); err != nil {
		fmt.Println("helper:", err)
		return 1
	}
	return 0
}

// testHandler is the handler used by helper processes and some tests. The
// payload is a command:
//
//	echo:X        reply "<worker>:<attempt>:X"
//	sleep:MS:X    sleep MS milliseconds (or until ctx ends), then echo X
//	block-first:X attempt 1 blocks until ctx ends; later attempts echo X
//	wait-file:P:X attempt 1 ignores ctx and waits for file P, then echoes
//	              X; later attempts echo X at once
//	exit          the process exits with status 3 (a poison job)
//	open:S        bind session S and echo
//	close:S       unbind session S and echo
func testHandler(id string, started func(Job)) Handler {
	return HandlerFunc(func(ctx context.Context, j Job) (Reply, error) {
		started(j)
		cmd, arg, _ := strings.Cut(string(j.Payload), ":")
		echo := func(x string) []byte { return fmt.Appendf(nil, "%s:%d:%s", id, j.Attempt, x) }
		switch cmd {
		case "echo":
			return Reply{Payload: echo(arg)}, nil
		case "sleep":
			ms, x, _ := strings.Cut(arg, ":")
			n, _ := strconv.Atoi(ms)
			t := time.NewTimer(time.Duration(n) * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return Reply{}, ctx.Err()
			}
			return Reply{Payload: echo(x)}, nil
		case "block-first":
			if j.Attempt == 1 {
				<-ctx.Done()
				return Reply{}, ctx.Err()
			}
			return Reply{Payload: echo(arg)}, nil
		case "wait-file":
			path, x, _ := strings.Cut(arg, ":")
			if j.Attempt == 1 {
				for {
					if _, err := os.Stat(path); err == nil {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			return Reply{Payload: echo(x)}, nil
		case "exit":
			os.Exit(3)
		case "open":
			return Reply{Payload: echo(arg), BindSession: arg}, nil
		case "close":
			return Reply{Payload: echo(arg), UnbindSession: arg}, nil
		}
		return Reply{}, fmt.Errorf("unknown command %q", cmd)
	})
}

// proc is a helper worker process with its stdout lines collected.
type proc struct {
	t    *testing.T
	id   string
	cmd  *exec.Cmd
	done chan struct{}

	mu    sync.Mutex
	lines []string
	cond  chan struct{} // closed and replaced on each new line
}

// startWorkerProc starts a helper worker process named id; env adds
// AQ_* settings. It is killed at the end of the test.
func startWorkerProc(t *testing.T, srv *redistest.Server, name, id string, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=worker", "AQ_REDIS="+srv.URL(), "AQ_NAME="+name, "AQ_ID="+id)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, id: id, cmd: cmd, done: make(chan struct{}), cond: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			close(p.cond)
			p.cond = make(chan struct{})
			p.mu.Unlock()
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill(syscall.SIGKILL) })
	return p
}

// kill sends sig and, for terminating signals, waits for the exit.
func (p *proc) kill(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	if sig == syscall.SIGKILL || sig == syscall.SIGTERM {
		<-p.done
	}
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitLine waits for an output line containing all of parts.
func (p *proc) waitLine(timeout time.Duration, parts ...string) string {
	p.t.Helper()
	deadline := time.After(timeout)
	for i := 0; ; {
		p.mu.Lock()
		for ; i < len(p.lines); i++ {
			if containsAll(p.lines[i], parts) {
				l := p.lines[i]
				p.mu.Unlock()
				return l
			}
		}
		cond := p.cond
		p.mu.Unlock()
		select {
		case <-cond:
		case <-p.done:
			p.mu.Lock()
			n := len(p.lines)
			p.mu.Unlock()
			if i == n {
				p.t.Fatalf("worker %s exited before printing %q", p.id, parts)
			}
		case <-deadline:
			p.t.Fatalf("worker %s did not print %q within %v", p.id, parts, timeout)
		}
	}
}

// containsAll reports whether s contains every part.
func containsAll(s string, parts []string) bool {
	for _, x := range parts {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
