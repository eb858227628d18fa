package sandbox

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// TestShellOneShotWithoutKernel: a one-shot shell call, in each image,
// runs as a bash the image's controller spawned; the zygote and the spare
// kernels beside it (they run zygote.py) are all out of its reach (not
// dumpable: their environ cannot be read), oom_score_adj 1000, SIGINT not
// ignored (so interrupts and timeouts reach it), none of the controller's
// fds, the call's env; back-to-back calls reuse the container; a leftover
// background process is gone by the next call; a Python call after shell
// calls gets a fresh kernel; a stuck shell is stopped at its timeout.
func TestShellOneShotWithoutKernel(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	e := pooledEngine(t, nil)
	for _, lang := range []core.Language{core.Shell, core.Python} {
		t.Run(string(lang)+"-image", func(t *testing.T) { shellOneShot(t, e, e.cfg.Images[lang]) })
	}
}

// shellOneShot runs TestShellOneShotWithoutKernel's calls on img.
func shellOneShot(t *testing.T, e *Engine, img string) {
	sh := func(code string, lim core.Limits) core.Result {
		return run(t, e, core.Request{Owner: "sh", Language: core.Shell, Image: img, Code: code, Limits: lim,
			Env: map[string]string{"LANG": "C.UTF-8"}})
	}
	first := sh(`for p in /proc/[0-9]*; do grep -qs 'zygote[.]py' $p/cmdline || continue; cat $p/environ >/dev/null 2>&1 && echo -n R || echo -n D; done; echo
cat /proc/self/oom_score_adj
grep SigIgn /proc/self/status
ls /proc/self/fd | tr '\n' ' '; echo
echo "lang=$LANG"
sleep 300 &`, core.Limits{})
	if first.Status != core.StatusOK {
		t.Fatalf("first call: %s", brief(first))
	}
	lines := strings.Split(strings.TrimSpace(first.Stdout), "\n")
	if len(lines) != 5 {
		t.Fatalf("output %q", first.Stdout)
	}
	if len(lines[0]) < 2 || strings.Trim(lines[0], "D") != "" {
		t.Errorf("zygote.py processes during the shell call %q (D: environ unreadable, R: readable), want the zygote and at least one spare, all D", lines[0])
	}
	if lines[1] != "1000" {
		t.Errorf("oom_score_adj %s, want 1000", lines[1])
	}
	var ign uint64
	if _, err := fmtSscanHex(strings.TrimSpace(strings.TrimPrefix(lines[2], "SigIgn:")), &ign); err != nil {
		t.Fatalf("SigIgn line %q: %v", lines[2], err)
	}
	if ign&(1<<(2-1)) != 0 {
		t.Errorf("SIGINT is ignored in the shell (SigIgn %x)", ign)
	}
	if f := strings.Fields(lines[3]); len(f) != 4 { // 0 1 2 and ls's own directory fd
		t.Errorf("fds open in the shell: %q, want 0 1 2 and ls's own", lines[3])
	}
	if lines[4] != "lang=C.UTF-8" {
		t.Errorf("env: %q", lines[4])
	}
	second := sh(`pgrep -c -f "slee[p] 300" || true`, core.Limits{})
	if second.Container != first.Container {
		t.Errorf("second call in container %s, first in %s: the warm container was not reused", second.Container, first.Container)
	}
	if strings.TrimSpace(second.Stdout) != "0" {
		t.Errorf("the first call's background sleep survived: %q", second.Stdout)
	}
	py := run(t, e, core.Request{Owner: "sh", Language: core.Python, Image: img, Code: "import os; print(os.getpid() > 1)"})
	if py.Status != core.StatusOK || py.Stdout != "True\n" || py.Container != first.Container {
		t.Errorf("python after shell calls: %s (container %s)", brief(py), py.Container)
	}
	start := time.Now()
	stuck := sh(`trap '' TERM; sleep 1000`, core.Limits{Timeout: time.Second})
	if stuck.Status != core.StatusTimeout || time.Since(start) > 8*time.Second {
		t.Errorf("stuck shell: %s after %s", brief(stuck), time.Since(start))
	}
	after := sh(`echo ok`, core.Limits{})
	if after.Status != core.StatusOK || after.Stdout != "ok\n" {
		t.Errorf("call after a timeout: %s", brief(after))
	}
}

// fmtSscanHex parses a hexadecimal /proc status mask.
func fmtSscanHex(s string, v *uint64) (int, error) { return fmt.Sscanf(s, "%x", v) }
