package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// childEnv is the bench's environment without AIRLOCK_* variables, so that
// a developer's settings do not change what the children measure.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AIRLOCK_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// server is a long-lived child process (airlock serve, redis-server).
type server struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File
}

// startServer starts argv with its output in logPath.
func startServer(logPath string, env []string, argv ...string) (*server, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	s := &server{cmd: cmd, done: make(chan struct{}), log: lf}
	go func() { _ = cmd.Wait(); close(s.done) }()
	return s, nil
}

// pid is the child's process id.
func (s *server) pid() int { return s.cmd.Process.Pid }

// stop sends SIGTERM and waits up to grace, then SIGKILL.
func (s *server) stop(grace time.Duration) {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(grace):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.log.Close()
}

// exited reports whether the child has ended.
func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// waitHTTP polls url until it answers 200, the child dies or the time is up.
func waitHTTP(ctx context.Context, s *server, url string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if s.exited() {
			return fmt.Errorf("server exited early; see %s", s.log.Name())
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not ready after %s; see %s", url, limit, s.log.Name())
}

// procKB reads a "Name:  N kB" field of /proc/PID/status in bytes.
func procKB(pid int, field string) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

// rssSampler follows a process's resident memory.
type rssSampler struct {
	pid   int
	stop  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	peak  int64 // highest VmRSS sampled
	start int64 // VmRSS when sampling began
}

// sampleRSS starts sampling pid's VmRSS every 20 ms.
func sampleRSS(pid int) *rssSampler {
	r := &rssSampler{pid: pid, stop: make(chan struct{}), start: procKB(pid, "VmRSS")}
	r.peak = r.start
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				v := procKB(pid, "VmRSS")
				r.mu.Lock()
				r.peak = max(r.peak, v)
				r.mu.Unlock()
			}
		}
	}()
	return r
}

// rssReading is what a sampler saw plus the kernel's high-water mark.
type rssReading struct{ before, after, peakSampled, hwm int64 }

// finish stops sampling and reads the current RSS and VmHWM.
func (r *rssSampler) finish() rssReading {
	close(r.stop)
	r.wg.Wait()
	return rssReading{before: r.start, after: procKB(r.pid, "VmRSS"), peakSampled: r.peak, hwm: procKB(r.pid, "VmHWM")}
}

// timedRun runs argv to completion and returns its wall time, its peak RSS
// (from rusage) and an error that includes its stderr on failure.
func timedRun(ctx context.Context, env []string, wantStdout string, argv ...string) (time.Duration, int64, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t := time.Now()
	err := cmd.Run()
	d := time.Since(t)
	var rss int64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss << 10
		}
	}
	if err != nil {
		return d, rss, fmt.Errorf("%s: %v: %s", argv[0], err, strings.TrimSpace(stderr.String()))
	}
	if wantStdout != "" && stdout.String() != wantStdout {
		return d, rss, fmt.Errorf("%s: stdout %q, want %q", argv[0], stdout.String(), wantStdout)
	}
	return d, rss, nil
}
