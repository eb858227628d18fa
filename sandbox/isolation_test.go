package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// mode is one way a request reaches a container: every isolation test
// runs in each of them.
type mode struct {
	name string
	run  func(t *testing.T, req core.Request) core.Result
}

// modes builds a by-language (shell calls in the shell image, Python
// calls in the python one), cold, pooled and session mode over engines that
// share cfg; the last three run every call in the python image.
func modes(t *testing.T, mod func(*Config)) []mode {
	cold := newTestEngine(t, mod)
	pooled := newTestEngine(t, func(c *Config) {
		if mod != nil {
			mod(c)
		}
		c.PoolSize = 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()
	if err := pooled.Start(ctx); err != nil {
		t.Fatalf("start pool: %v", err)
	}
	return []mode{
		{"by-language", func(t *testing.T, req core.Request) core.Result {
			return run(t, cold, req)
		}},
		{"cold", func(t *testing.T, req core.Request) core.Result {
			req.Image = cold.cfg.Images[core.Python]
			return run(t, cold, req)
		}},
		{"pooled", func(t *testing.T, req core.Request) core.Result {
			waitPool(t, pooled)
			req.Image = pooled.cfg.Images[core.Python]
			return run(t, pooled, req)
		}},
		{"session", func(t *testing.T, req core.Request) core.Result {
			ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
			defer cancel()
			info, rej, err := cold.OpenSession(ctx, core.Request{Owner: "t", Limits: req.Limits, Mount: req.Mount, Env: req.Env})
			if err != nil || rej != nil {
				t.Fatalf("open session: %v %+v", err, rej)
			}
			defer func() { _ = cold.CloseSession("t", info.ID) }()
			req.SessionID, req.Owner, req.Mount, req.Env = info.ID, "t", "", nil
			res, err := cold.SessionExec(ctx, req)
			if err != nil {
				t.Fatalf("session exec: %v", err)
			}
			return res
		}},
	}
}

// waitPool waits until the pool of every image has a ready container, so
// the pooled mode really runs on a warm one.
func waitPool(t *testing.T, e *Engine) {
	t.Helper()
	for _, img := range e.cfg.Images {
		e.mu.Lock()
		p := e.pools[poolKey{image: img}]
		e.mu.Unlock()
		if p == nil {
			t.Fatalf("no pool for %s", img)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()
	if err := e.WaitWarm(ctx); err != nil {
		t.Fatal(err)
	}
}

func forModes(t *testing.T, mod func(*Config), f func(t *testing.T, m mode)) {
	for _, m := range modes(t, mod) {
		t.Run(m.name, func(t *testing.T) { f(t, m) })
	}
}

// forModesSideBySide is forModes with the modes running at once (each
// mode's checks still in order), for checks with no timing, CPU or heap
// bound: the cold engine then serves several calls at once, as a server's
// does. The parent's environment and temp dirs last until every mode ends.
func forModesSideBySide(t *testing.T, mod func(*Config), f func(t *testing.T, m mode)) {
	for _, m := range modes(t, mod) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			f(t, m)
		})
	}
}

func TestIsolation(t *testing.T) {
	canary := "canary-" + newID()
	t.Setenv("AIRLOCK_TEST_SECRET_TOKEN", canary)
	host := t.TempDir()
	secret := "host-secret-" + newID()
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(host, "abs-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../../../.."+outside, filepath.Join(host, "rel-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "data.txt"), []byte("inside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bridge := bridgeAddr(t)

	// Every check below bounds a count, a status or what is visible, never
	// a duration or the CPU: the four modes run side by side.
	forModesSideBySide(t, nil, func(t *testing.T, m mode) {
		t.Run("fork bomb stopped by pids limit", func(t *testing.T) {
			r := m.run(t, core.Request{Language: core.Python, Limits: core.Limits{Pids: 32, Timeout: 30 * time.Second}, Code: `
import os, time
n = 0
try:
    while n < 10000:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as e:
    print("blocked after", n, "errno", e.errno)
`})
			m := regexp.MustCompile(`blocked after (\d+) errno 11`).FindStringSubmatch(r.Stdout)
			if m == nil {
				t.Fatalf("fork loop was not stopped by the pids limit: %s", brief(r))
			}
			if n, _ := strconv.Atoi(m[1]); n >= 32 {
				t.Fatalf("forked %d processes with a pids limit of 32", n)
			}
		})
		t.Run("shell fork bomb ends", func(t *testing.T) {
			r := m.run(t, core.Request{Language: core.Shell, Limits: core.Limits{Pids: 32, Timeout: 3 * time.Second}, Code: `bomb() { bomb | bomb & }; bomb; sleep 10; echo survived`})
			if r.Status == core.StatusOK || strings.Contains(r.Stdout, "survived") {
				t.Fatalf("fork bomb ran to completion: %s", brief(r))
			}
		})
		t.Run("thread bomb stopped by pids limit", func(t *testing.T) {
			r := m.run(t, core.Request{Language: core.Python, Limits: core.Limits{Pids: 32, Timeout: 30 * time.Second}, Code: `
import threading, time
ev = threading.Event()
n = 0
try:
    while n < 10000:
        threading.Thread(target=ev.wait, daemon=True).start()
        n += 1
except RuntimeError as e:
    print("blocked after", n)
ev.set()
`})
			m := regexp.MustCompile(`blocked after (\d+)`).FindStringSubmatch(r.Stdout)
			if m == nil {
				t.Fatalf("thread loop was not stopped: %s", brief(r))
			}
			if n, _ := strconv.Atoi(m[1]); n >= 32 {
				t.Fatalf("started %d threads with a pids limit of 32", n)
			}
		})
		t.Run("memory bomb is oom", func(t *testing.T) {
			r := m.run(t, core.Request{Language: core.Python, Limits: core.Limits{Memory: 64 << 20, Timeout: 60 * time.Second},
				Code: "x = []\nwhile True:\n    x.append(bytearray(8 << 20))\n"})
			if r.Status != core.StatusOOM {
				t.Fatalf("status %s, want oom: %s", r.Status, brief(r))
			}
		})
		t.Run("tmp is size capped", func(t *testing.T) {
			r := m.run(t, core.Request{Language: core.Shell, Limits: core.Limits{TmpfsBytes: 16 << 20, Timeout: 30 * time.Second},
				Code: `dd if=/dev/zero of=/tmp/big bs=1M count=100 2>&1; stat -c 'size=%s' /tmp/big`})
			if !strings.Contains(r.Stdout, "No space left on device") {
				t.Fatalf("filling /tmp did not hit the tmpfs cap: %s", brief(r))
			}
			size := regexp.MustCompile(`size=(\d+)`).FindStringSubmatch(r.Stdout)
			if size == nil {
				t.Fatalf("no size: %q", r.Stdout)
			}
			if n, _ := strconv.Atoi(size[1]); n > 16<<20 {
				t.Fatalf("wrote %d bytes into a 16 MiB tmpfs", n)
			}
		})
		t.Run("root usr and mount are read-only", func(t *testing.T) {
			r := m.run(t, core.Request{Language: core.Shell, Mount: host, Code: `
for f in /x /usr/x /workspace/x /etc/passwd; do
  if echo hi >> $f 2>/dev/null; then echo "WROTE $f"; else echo "refused $f"; fi
done
cat /workspace/data.txt`})
			if strings.Contains(r.Stdout, "WROTE") || strings.Count(r.Stdout, "refused") != 4 || !strings.Contains(r.Stdout, "inside") {
				t.Fatalf("writes not refused or mount unreadable: %s", brief(r))
			}
		})
		t.Run("symlinks in mount do not reach the host", func(t *testing.T) {
			r := m.run(t, core.Request{Language: core.Shell, Mount: host, Code: `cat /workspace/abs-link /workspace/rel-link ` + outside + ` 2>&1; true`})
			if strings.Contains(r.Stdout+r.Stderr, secret) {
				t.Fatalf("a symlink in the mount exposed a host file: %s", brief(r))
			}
		})
		t.Run("no network but loopback", func(t *testing.T) {
			r := m.run(t, core.Request{Language: core.Shell, Code: `tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; echo routes; tail -n +2 /proc/net/route`})
			ifaces, routes, _ := strings.Cut(r.Stdout, "routes\n")
			if strings.TrimSpace(ifaces) != "lo" || strings.TrimSpace(routes) != "" {
				t.Fatalf("container has interfaces %q and routes %q", ifaces, routes)
			}
		})
		t.Run("host bridge listener unreachable", func(t *testing.T) {
			ln, err := net.Listen("tcp", net.JoinHostPort(bridge, "0"))
			if err != nil {
				t.Fatalf("listen on bridge: %v", err)
			}
			defer ln.Close()
			var accepted atomic.Int32
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					accepted.Add(1)
					c.Close()
				}
			}()
			port := ln.Addr().(*net.TCPAddr).Port
			r := m.run(t, core.Request{Language: core.Python, Code: fmt.Sprintf(`
import socket
s = socket.socket()
s.settimeout(3)
try:
    s.connect((%q, %d))
    print("CONNECTED")
except OSError as e:
    print("refused", e)
`, bridge, port)})
			if !strings.Contains(r.Stdout, "refused") || strings.Contains(r.Stdout, "CONNECTED") || accepted.Load() != 0 {
				t.Fatalf("reached the host bridge listener: %s (accepted %d)", brief(r), accepted.Load())
			}
		})
		t.Run("host environment not inherited", func(t *testing.T) {
			r := m.run(t, core.Request{Language: core.Shell, Code: `env; tr '\0' '\n' < /proc/1/environ; tr '\0' '\n' < /proc/self/environ; echo $AIRLOCK_TEST_SECRET_TOKEN`})
			if strings.Contains(r.Stdout+r.Stderr, canary) {
				t.Fatalf("canary secret visible in the sandbox: %s", brief(r))
			}
			if !strings.Contains(r.Stdout, "PATH=") {
				t.Fatalf("env not listed: %s", brief(r))
			}
		})
		t.Run("no capabilities and not root", func(t *testing.T) {
			r := m.run(t, core.Request{Language: core.Shell, Code: `grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status; echo uid=$(id -u); grep NoNewPrivs /proc/self/status`})
			caps := regexp.MustCompile(`(?m)^Cap\w+:\s*([0-9a-f]+)$`).FindAllStringSubmatch(r.Stdout, -1)
			if len(caps) != 5 {
				t.Fatalf("capability lines missing: %q", r.Stdout)
			}
			for _, c := range caps {
				if strings.Trim(c[1], "0") != "" {
					t.Fatalf("non-zero capability set %q", c[0])
				}
			}
			uid := regexp.MustCompile(`uid=(\d+)`).FindStringSubmatch(r.Stdout + "uid=0")
			if n, _ := strconv.Atoi(uid[1]); !DefaultUIDRange.contains(n) {
				t.Fatalf("wrong uid: %q", r.Stdout)
			}
			if !regexp.MustCompile(`NoNewPrivs:\s*1`).MatchString(r.Stdout) {
				t.Fatalf("no_new_privs not set: %q", r.Stdout)
			}
		})
		t.Run("mount unshare raw sockets and proc sys fail", func(t *testing.T) {
			r := m.run(t, core.Request{Language: core.Shell, Code: `
mount -t tmpfs none /tmp 2>/dev/null && echo "MOUNTED" || echo "mount refused"
unshare -U -r true 2>/dev/null && echo "UNSHARED" || echo "unshare refused"
echo 1 > /proc/sys/kernel/sysrq 2>/dev/null && echo "SYSCTL" || echo "sysctl refused"
python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); print("RAW")' 2>/dev/null || echo "raw refused"
ls /dev`})
			for _, bad := range []string{"MOUNTED", "UNSHARED", "SYSCTL", "RAW"} {
				if strings.Contains(r.Stdout, bad) {
					t.Fatalf("%s succeeded: %s", bad, brief(r))
				}
			}
			if c := strings.Count(r.Stdout, "refused"); c != 4 {
				t.Fatalf("expected 4 refusals: %s", brief(r))
			}
		})
		t.Run("trapped TERM still times out", func(t *testing.T) {
			r := m.run(t, core.Request{Language: core.Shell, Limits: core.Limits{Timeout: 2 * time.Second}, Code: `trap '' TERM INT; sleep 1000`})
			if r.Status != core.StatusTimeout {
				t.Fatalf("status %s, want timeout: %s", r.Status, brief(r))
			}
		})
		t.Run("invalid utf8 made safe", func(t *testing.T) {
			r := m.run(t, core.Request{Language: core.Shell, Code: `printf 'a\xff\xfeb\000c'`})
			// One U+FFFD per bad byte, from the controller.
			if r.Stdout != "a\uFFFD\uFFFDb\uFFFDc" {
				t.Fatalf("stdout %q", r.Stdout)
			}
		})
		t.Run("exit code is a result", func(t *testing.T) {
			r := m.run(t, core.Request{Language: core.Shell, Code: `echo out; echo err >&2; exit 3`})
			if r.Status != core.StatusError || r.ExitCode != 3 || r.Stdout != "out\n" || r.Stderr != "err\n" {
				t.Fatalf("got %s", brief(r))
			}
		})
	})
}

// TestOutputFlood checks that a 5 GB stdout flood ends as output_limit
// while Airlock's own memory stays flat.
func TestOutputFlood(t *testing.T) {
	forModes(t, nil, func(t *testing.T, m mode) {
		var r core.Result
		base, peak := heapDuring(func() {
			r = m.run(t, core.Request{Language: core.Shell, Limits: core.Limits{Timeout: 60 * time.Second}, Code: `head -c 5000000000 /dev/zero | tr '\0' 'x'`})
		})
		if r.Status != core.StatusOutputLimit || !r.Truncated {
			t.Fatalf("status %s truncated %v, want output_limit: %s", r.Status, r.Truncated, r.Message)
		}
		if len(r.Stdout) > 64<<10 {
			t.Fatalf("kept %d bytes of stdout, cap is 64 KiB", len(r.Stdout))
		}
		if peak > base+64<<20 {
			t.Fatalf("heap grew from %d to %d bytes during the flood", base, peak)
		}
	})
}

// TestBackgroundProcessDies: a double-forked process does not outlive a
// one-shot run.
func TestBackgroundProcessDies(t *testing.T) {
	e := newTestEngine(t, nil)
	mark := strconv.Itoa(1000 + int(time.Now().UnixNano()%8999))
	for _, lang := range []core.Language{core.Shell, core.Python} {
		req := core.Request{Language: core.Shell, Code: `(setsid sleep ` + mark + ` >/dev/null 2>&1 &) ; sleep 0.2; pgrep -f "sleep ` + mark + `" >/dev/null && echo started`}
		if lang == core.Python {
			req.Image = e.cfg.Images[core.Python]
		}
		r := run(t, e, req)
		if !strings.Contains(r.Stdout, "started") {
			t.Fatalf("background process did not start: %s", brief(r))
		}
		e.Settle()
		if procRunning(t, "sleep "+mark) {
			t.Fatalf("%s: background 'sleep %s' survived the run", lang, mark)
		}
	}
}

// procRunning looks for a process with this command line on the host.
func procRunning(t *testing.T, cmdline string) bool {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("read /proc: %v", err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ") == cmdline {
			return true
		}
	}
	return false
}

// bridgeAddr is this machine's own Docker bridge address (docker0).
func bridgeAddr(t *testing.T) string {
	t.Helper()
	ifc, err := net.InterfaceByName("docker0")
	if err != nil {
		t.Fatalf("docker0: %v", err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		t.Fatalf("docker0 addresses: %v", err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	t.Fatal("docker0 has no IPv4 address")
	return ""
}
