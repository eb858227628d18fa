package sandbox

import (
	"context"
	"errors"
	"fmt"
	"github.com/airlock-dev/airlock/internal/testscale"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
)

// pooledEngine starts an engine with one generic warm container per image
// and waits for it.
func pooledEngine(t *testing.T, mod func(*Config)) *Engine {
	t.Helper()
	e := newTestEngine(t, func(c *Config) {
		c.PoolSize = 1
		if mod != nil {
			mod(c)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitPool(t, e)
	return e
}

// TestOwnerIsolation (issue 12): files in /tmp and /work, a background
// process and a module-level variable of call N are not visible to call
// N+1 of the same owner (which runs warm in the same container), and a
// container that served owner A never serves owner B.
func TestOwnerIsolation(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	e := pooledEngine(t, nil)
	first := run(t, e, core.Request{Owner: "A", Language: core.Python, Code: `
import socket, subprocess, os
open('/tmp/left.txt', 'w').write('x')
os.makedirs('/work/d', exist_ok=True)
open('/work/d/left.txt', 'w').write('x')
subprocess.Popen(['sleep', '300'], start_new_session=True)
LEFT = 42
print(socket.gethostname())`})
	if first.Status != core.StatusOK {
		t.Fatalf("first call: %s", brief(first))
	}
	hostA := strings.TrimSpace(first.Stdout)
	second := run(t, e, core.Request{Owner: "A", Language: core.Python, Code: `
import socket, os
seen = []
if os.path.exists('/tmp/left.txt'): seen.append('tmp file')
if os.path.exists('/work/d'): seen.append('work file')
if 'LEFT' in globals(): seen.append('variable')
for p in os.listdir('/proc'):
    if p.isdigit():
        try:
            if b'sleep' in open('/proc/%s/cmdline' % p, 'rb').read(): seen.append('process')
        except OSError: pass
print(socket.gethostname()); print(seen)`})
	host2, seen, _ := strings.Cut(strings.TrimSpace(second.Stdout), "\n")
	if second.Status != core.StatusOK || seen != "[]" {
		t.Fatalf("call N+1 of the same owner saw call N's %s: %s", seen, brief(second))
	}
	if host2 != hostA {
		t.Fatalf("same owner's next call was not warm in its container: %s then %s", hostA, host2)
	}
	hostsA := map[string]bool{hostA: true}
	for i := 0; i < 3; i++ {
		for _, owner := range []string{"B", "A"} {
			waitPool(t, e)
			r := run(t, e, core.Request{Owner: owner, Language: core.Python, Code: "import socket; print(socket.gethostname())"})
			h := strings.TrimSpace(r.Stdout)
			if owner == "A" {
				hostsA[h] = true
			} else if hostsA[h] {
				t.Fatalf("owner B was served by container %s, which served owner A", h)
			}
		}
	}
	for h := range hostsA {
		if h != hostA {
			t.Logf("owner A also used %s", h)
		}
	}
}

// TestSingleUse: in single-use mode no container serves two calls.
func TestSingleUse(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	e := pooledEngine(t, func(c *Config) { c.SingleUse = true })
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		waitPool(t, e)
		r := run(t, e, core.Request{Owner: "A", Language: core.Python, Code: "import socket, sys; print(socket.gethostname()); print('pandas' in sys.modules)"})
		host, preloaded, _ := strings.Cut(strings.TrimSpace(r.Stdout), "\n")
		if seen[host] || r.Container != host || preloaded != "True" {
			t.Fatalf("single use: %s (seen %v)", brief(r), seen)
		}
		seen[host] = true
	}
}

// TestForgery (issue 11): frame walking for the request id, a forged done
// frame, patching __main__ and writing to every reachable fd change
// nothing but the call's own output.
func TestForgery(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	e := pooledEngine(t, nil)
	attacks := map[string]string{
		"frame walk": `
import sys, json, re
ids = set()
f = sys._getframe()
while f is not None:
    for v in list(f.f_locals.values()) + list(f.f_globals.values()):
        if isinstance(v, str) and re.fullmatch(r'[0-9a-f]{24}', v): ids.add(v)
        if isinstance(v, dict):
            for x in v.values():
                if isinstance(x, str) and re.fullmatch(r'[0-9a-f]{24}', x): ids.add(x)
    f = f.f_back
for i in ids | {'x'}:
    print(json.dumps({"t": "done", "id": i, "status": "ok", "exit_code": 0, "artifacts": [{"name": "f.png", "mime": "image/png", "data": "AAAA"}]}))
print("FORGED")
sys.exit(3)`,
		"__main__ patch": `
import sys
for name in list(sys.modules):
    if 'airlock' in name or name in ('kernel', 'zygote', 'controller'):
        sys.modules[name] = None
m = sys.modules['__main__']
for k in list(vars(m)):
    if not k.startswith('__'):
        try: setattr(m, k, None)
        except Exception: pass
print("FORGED")
raise SystemExit(3)`,
		"controller fds": `
import os, sys, json
line = (json.dumps({"t": "done", "id": "x", "status": "ok", "exit_code": 0}) + "\n").encode()
for p in os.listdir('/proc'):
    if not p.isdigit() or int(p) == os.getpid(): continue
    try: fds = os.listdir('/proc/%s/fd' % p)
    except OSError: continue
    for fd in fds:
        try:
            w = os.open('/proc/%s/fd/%s' % (p, fd), os.O_WRONLY | os.O_NONBLOCK)
            os.write(w, line); os.close(w)
        except OSError: pass
for fd in range(3, 1024):
    try: os.write(fd, line)
    except OSError: pass
print("FORGED")
sys.exit(3)`,
	}
	names := make([]string, 0, len(attacks))
	for n := range attacks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		r := run(t, e, core.Request{Owner: "A", Language: core.Python, Code: attacks[name]})
		if r.Status != core.StatusError || r.ExitCode != 3 || len(r.Artifacts) != 0 || !strings.HasSuffix(r.Stdout, "FORGED\n") {
			t.Fatalf("%s changed the caller's view: %s", name, brief(r))
		}
		// The same owner's next call, in the same container, is unaffected.
		if r2 := run(t, e, core.Request{Owner: "A", Language: core.Python, Code: "print(6 * 7)"}); r2.Status != core.StatusOK || r2.Stdout != "42\n" {
			t.Fatalf("after %s: %s", name, brief(r2))
		}
	}
	// In a session too, and file operations stay the controller's.
	s := openSession(t, e, "o")
	r := sexec(t, e, s.ID, "o", core.Python, attacks["__main__ patch"], core.Limits{})
	if r.ExitCode != 3 {
		t.Fatalf("session patch: %s", brief(r))
	}
	ctx := context.Background()
	if err := e.PutFile(ctx, "o", s.ID, "f.txt", []byte("real")); err != nil {
		t.Fatal(err)
	}
	if got, err := e.GetFile(ctx, "o", s.ID, "f.txt"); err != nil || string(got) != "real" {
		t.Fatalf("download after patching: %q %v", got, err)
	}
}

// burn keeps both cores busy until the test ends.
func burn(t *testing.T) {
	t.Helper()
	for i := 0; i < 2; i++ {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
}

// TestOrderingUnderLoad (issue 11): 1,000 session calls under CPU load,
// each writing stdout and an unterminated stderr just before it ends;
// every call gets exactly its own bytes.
func TestOrderingUnderLoad(t *testing.T) {
	e := newTestEngine(t, nil)
	s := openSession(t, e, "o")
	burn(t)
	n := 1000
	if testing.Short() {
		n = 100
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		code := fmt.Sprintf("import sys\nprint('o%d')\n_ = sys.stderr.write('e%d')", i, i)
		if i%2 == 1 {
			code = fmt.Sprintf("import sys\n_ = sys.stderr.write('e%d')\n_ = sys.stdout.write('o%d\\n')", i, i)
		}
		r := sexec(t, e, s.ID, "o", core.Python, code, core.Limits{})
		if r.Stdout != fmt.Sprintf("o%d\n", i) || r.Stderr != fmt.Sprintf("e%d", i) {
			t.Fatalf("call %d got misattributed output: %s", i, brief(r))
		}
		if time.Since(start) > 3*time.Minute {
			t.Fatalf("only %d calls in 3 minutes", i)
		}
	}
	t.Logf("%d calls under load in %s", n, time.Since(start).Round(time.Millisecond))
}

// TestDisconnectKeepsSession (issue 11): a caller going away during
// time.sleep(60) interrupts the call; the session and its state live on.
func TestDisconnectKeepsSession(t *testing.T) {
	e := newTestEngine(t, nil)
	s := openSession(t, e, "o")
	sexec(t, e, s.ID, "o", core.Python, "x = 41", core.Limits{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	_, err := e.SessionExec(ctx, core.Request{SessionID: s.ID, Owner: "o", Code: "import time\ntime.sleep(60)", Limits: core.Limits{Timeout: 2 * time.Minute}})
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("abandoned call: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("abandoned call took %s", d)
	}
	if _, err := e.Session("o", s.ID); err != nil {
		t.Fatalf("session gone after a disconnect: %v", err)
	}
	if r := sexec(t, e, s.ID, "o", core.Python, "print(x + 1)", core.Limits{}); r.Stdout != "42\n" {
		t.Fatalf("state lost after a disconnect: %s", brief(r))
	}
}

// TestInterruptAndRestart (issue 11): interrupt during time.sleep(60)
// returns within a second and keeps state; restart keeps files, drops state.
func TestInterruptAndRestart(t *testing.T) {
	e := newTestEngine(t, nil)
	s := openSession(t, e, "o")
	sexec(t, e, s.ID, "o", core.Python, "import time\nx = 5\n_ = open('keep.txt', 'w').write('k')", core.Limits{})
	done := make(chan core.Result, 1)
	go func() {
		r, _ := e.SessionExec(context.Background(), core.Request{SessionID: s.ID, Owner: "o", Code: "y = 7\ntime.sleep(60)", Limits: core.Limits{Timeout: 2 * time.Minute}})
		done <- r
	}()
	waitBusy(t, e, s.ID) // interrupt at once: the call may not have started its code yet
	at := time.Now()
	ok, err := e.InterruptSession(context.Background(), "o", s.ID)
	if err != nil || !ok {
		t.Fatalf("interrupt: %v %v", ok, err)
	}
	select {
	case r := <-done:
		if d := time.Since(at); d > time.Second {
			t.Fatalf("interrupted call returned after %s", d)
		}
		if r.Status != core.StatusError || r.Error == nil || r.Error.Name != "KeyboardInterrupt" {
			t.Fatalf("interrupted call: %s", brief(r))
		}
	case <-time.After(testscale.D(10 * time.Second)):
		t.Fatal("interrupt did not end the call")
	}
	if r := sexec(t, e, s.ID, "o", core.Python, "print(x)", core.Limits{}); r.Stdout != "5\n" {
		t.Fatalf("state lost after interrupt: %s", brief(r))
	}
	if info, err := e.Session("o", s.ID); err != nil || info.State != "idle" || info.ExecCount < 2 || info.MemBytes <= 0 {
		t.Fatalf("session info %+v %v", info, err)
	}
	if err := e.RestartSession(context.Background(), "o", s.ID); err != nil {
		t.Fatal(err)
	}
	r := sexec(t, e, s.ID, "o", core.Python, "print('x' in globals(), open('keep.txt').read())", core.Limits{})
	if r.Stdout != "False k\n" {
		t.Fatalf("after restart: %s", brief(r))
	}
}

func waitBusy(t *testing.T, e *Engine, id string) {
	t.Helper()
	deadline := time.Now().Add(testscale.D(30 * time.Second))
	for {
		if info, err := e.Session("o", id); err == nil && info.State == "busy" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("session never became busy")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStreaming (issue 11): the first line of a slow loop reaches the sink
// within 1.5 s, and events come in order.
func TestStreaming(t *testing.T) {
	e := newTestEngine(t, nil)
	s := openSession(t, e, "o")
	var mu sync.Mutex
	var got []string
	first := make(chan time.Duration, 1)
	start := time.Now()
	ctx := core.WithSink(context.Background(), func(ev core.Event) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Kind == core.EventStdout {
			if len(got) == 0 {
				first <- time.Since(start)
			}
			got = append(got, ev.Text)
		}
	})
	start = time.Now()
	r, err := e.SessionExec(ctx, core.Request{SessionID: s.ID, Owner: "o", Code: "import time\nfor i in range(5):\n    print(i)\n    time.sleep(1)"})
	if err != nil || r.Stdout != "0\n1\n2\n3\n4\n" {
		t.Fatalf("streamed call: %v %s", err, brief(r))
	}
	if d := <-first; d > 1500*time.Millisecond {
		t.Fatalf("first line after %s", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, "") != r.Stdout {
		t.Fatalf("streamed %q, result %q", got, r.Stdout)
	}
}

// TestKernelDeath (issue 11): a kernel killed inside a session is reported
// on that call; files stay and the next call works.
func TestKernelDeath(t *testing.T) {
	e := newTestEngine(t, nil)
	s := openSession(t, e, "o")
	sexec(t, e, s.ID, "o", core.Python, "open('f.txt', 'w').write('kept')\nx = 1", core.Limits{})
	r := sexec(t, e, s.ID, "o", core.Python, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", core.Limits{})
	if r.Status != core.StatusError || !r.KernelRestarted || r.Message == "" || r.SessionEnded {
		t.Fatalf("kernel death: %s restarted=%v", brief(r), r.KernelRestarted)
	}
	r = sexec(t, e, s.ID, "o", core.Python, "print(open('f.txt').read(), 'x' in globals())", core.Limits{})
	if r.Status != core.StatusOK || r.Stdout != "kept False\n" {
		t.Fatalf("after kernel death: %s", brief(r))
	}
}

// TestRichResults: structured errors, displays, head+tail output, per-call
// env and stdin in a warm container; a bad env name is refused.
func TestRichResults(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	e := pooledEngine(t, nil)
	r := run(t, e, core.Request{Owner: "A", Language: core.Python, Code: "    x = 1\n    1 / 0"})
	if r.Error == nil || r.Error.Name != "ZeroDivisionError" || len(r.Error.Traceback) == 0 || !strings.Contains(r.Stderr, "ZeroDivisionError") {
		t.Fatalf("structured error: %+v %s", r.Error, brief(r))
	}
	r = run(t, e, core.Request{Owner: "A", Language: core.Python, Code: "import pandas as pd\npd.DataFrame({'a': [1, 2]})"})
	if len(r.Display) != 1 || !strings.Contains(r.Display[0].Data["text/html"], "<table") {
		t.Fatalf("display: %+v", r.Display)
	}
	// 0.5 s alone; a minute so a CI machine busy with other packages' tests
	// cannot turn this output check into a timeout (CI once saw 90k lines in 10 s).
	r = run(t, e, core.Request{Owner: "A", Language: core.Python, Limits: core.Limits{OutputBytes: 1 << 10, Timeout: time.Minute},
		Code: "for i in range(100000): print('line', i)"})
	if r.Status != core.StatusOK || !r.Truncated || r.Dropped.Stdout == 0 || !strings.HasPrefix(r.Stdout, "line 0\n") || !strings.HasSuffix(r.Stdout, "line 99999\n") {
		t.Fatalf("head and tail: dropped %+v %s", r.Dropped, brief(r))
	}
	r = run(t, e, core.Request{Owner: "A", Language: core.Python, Env: map[string]string{"MY_VAR": "v1"}, Stdin: "in put",
		Code: "import os, sys\nprint(os.environ['MY_VAR'], sys.stdin.read())"})
	if r.Stdout != "v1 in put\n" {
		t.Fatalf("env and stdin: %s", brief(r))
	}
	_, err := e.Exec(context.Background(), core.Request{Owner: "A", Language: core.Python, Env: map[string]string{"my_var": "x"}, Code: "1"})
	if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "my_var") {
		t.Fatalf("lowercase env name: %v", err)
	}
	r = run(t, e, core.Request{Owner: "A", Language: core.Python, Limits: core.Limits{Timeout: time.Minute},
		Code: "import sys\nwhile True: sys.stdout.write('x' * 65536)"})
	if r.Status != core.StatusOutputLimit {
		t.Fatalf("hard cap: %s", brief(r))
	}
}

// TestChunkedFiles: chunked upload with no gaps, chunked download, listing.
func TestChunkedFiles(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	e := newTestEngine(t, nil)
	s := openSession(t, e, "o")
	ctx := context.Background()
	if n, err := e.PutFileAt(ctx, "o", s.ID, "big.bin", 0, []byte("hello ")); err != nil || n != 6 {
		t.Fatalf("first chunk: %d %v", n, err)
	}
	if n, err := e.PutFileAt(ctx, "o", s.ID, "big.bin", 6, []byte("world")); err != nil || n != 11 {
		t.Fatalf("second chunk: %d %v", n, err)
	}
	if _, err := e.PutFileAt(ctx, "o", s.ID, "big.bin", 20, []byte("gap")); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("gap accepted: %v", err)
	}
	data, size, err := e.GetFileAt(ctx, "o", s.ID, "big.bin", 6, 3)
	if err != nil || string(data) != "wor" || size != 11 {
		t.Fatalf("chunk read: %q %d %v", data, size, err)
	}
	entries, err := e.ListFiles(ctx, "o", s.ID, "")
	if err != nil || len(entries) == 0 {
		t.Fatalf("list: %+v %v", entries, err)
	}
	found := false
	for _, en := range entries {
		found = found || (en.Name == "big.bin" && en.Size == 11 && en.Type == "file")
	}
	if !found {
		t.Fatalf("list: %+v", entries)
	}
}

// TestDeadMansSwitch (issue 13): kill -9 of the process that owns a
// container running a busy loop; within 5 s neither the container nor any
// of its processes remains.
func TestDeadMansSwitch(t *testing.T) {
	dc := integration(t)
	inst := "test-dms-" + newID()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBusyCall$")
	cmd.Env = append(os.Environ(), "AIRLOCK_TEST_DMS="+inst)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	list := func() []container.Summary {
		l, err := dc.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelInstance+"="+inst))})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	var id string
	deadline := time.Now().Add(testscale.D(2 * time.Minute))
	for id == "" || len(cgroupProcs(id)) < 3 { // controller, zygote, busy kernel
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("helper never started its busy call")
		}
		if l := list(); len(l) > 0 {
			id = l[0].ID
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	killed := time.Now()
	for len(list()) > 0 || len(cgroupProcs(id)) > 0 {
		if time.Since(killed) > testscale.D(5*time.Second) {
			t.Fatalf("5 s after its owner died: %d containers, processes %v", len(list()), cgroupProcs(id))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("container and processes gone %s after kill -9", time.Since(killed).Round(time.Millisecond))
}

// cgroupProcs lists host pids whose cgroup names container id.
func cgroupProcs(id string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/cgroup")
		if err == nil && strings.Contains(string(b), id) {
			out = append(out, filepath.Base(d))
		}
	}
	return out
}

// TestHelperBusyCall is the child process of TestDeadMansSwitch.
func TestHelperBusyCall(t *testing.T) {
	inst := os.Getenv("AIRLOCK_TEST_DMS")
	if inst == "" {
		t.Skip("helper process only")
	}
	cfg := DefaultConfig()
	cfg.Instance = inst
	cfg.Images = testImages()
	e := New(cfg, integration(t), nil)
	_, _ = e.Exec(context.Background(), core.Request{Language: core.Python, Code: "while True: pass", Limits: core.Limits{Timeout: 5 * time.Minute}})
}
