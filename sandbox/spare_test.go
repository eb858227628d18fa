package sandbox

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// spareAttack is a one-shot call that goes after the spare kernels waiting
// beside it (the zygote's other children): ptrace, their /proc files, their
// oom_score_adj, then signals (SIGKILL after "KILL = True", else SIGSTOP
// and a set of catchable ones). It prints what it found and what it reached.
// The refill that follows a call forks while the next call runs, so on a
// busy host the spares may not be there yet when it starts: it looks again
// for up to WAIT seconds until it finds one.
const spareAttack = `
KILL = globals().get('KILL', False)
import ctypes, json, os, signal, time
libc = ctypes.CDLL(None, use_errno=True)
me, zyg = os.getpid(), os.getppid()
end = time.monotonic() + WAIT
while True:
    spares = []
    for n in os.listdir('/proc'):
        if not n.isdigit() or int(n) == me:
            continue
        try:
            for line in open('/proc/%s/status' % n):
                if line.startswith('PPid:') and int(line.split()[1]) == zyg:
                    spares.append(int(n))
        except OSError:
            pass
    if spares or time.monotonic() > end:
        break
    time.sleep(0.02)
reached = []
for pid in spares:
    if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
        reached.append('ptrace')
        libc.ptrace(17, pid, 0, 0)
    for f in ('mem', 'environ', 'maps', 'stack'):
        try:
            open('/proc/%d/%s' % (pid, f), 'rb').read(1)
            reached.append(f)
        except OSError:
            pass
    for f in ('cwd', 'exe', 'root'):
        try:
            os.readlink('/proc/%d/%s' % (pid, f))
            reached.append(f)
        except OSError:
            pass
    try:
        os.listdir('/proc/%d/fd' % pid)
        reached.append('fd')
    except OSError:
        pass
    try:
        with open('/proc/%d/oom_score_adj' % pid, 'w') as f:
            f.write('-1000')
        reached.append('oom_score_adj')
    except OSError:
        pass
    sigs = [signal.SIGKILL] if KILL else [
        signal.SIGSTOP, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGQUIT, signal.SIGALRM]
    for s in sigs:
        os.kill(pid, s)
print(json.dumps({'spares': spares, 'reached': reached}))
`

// spareVictim is the next call: its pid, its blocked and pending signal
// masks (all must be clear), its cwd and whether /work leads sys.path.
const spareVictim = `
import os, sys
st = dict(l.split(':\t', 1) for l in open('/proc/self/status').read().splitlines() if ':\t' in l)
print(os.getpid(), st['SigBlk'].strip(), st['SigPnd'].strip(), st['ShdPnd'].strip(), os.getcwd(), sys.path[0],
      open('/proc/self/oom_score_adj').read().strip(), open('/proc/self/environ', 'rb').read(1) != b'')
`

// TestSpareKernelsOutOfReach: the spare kernels that wait in an owner's
// warm container while a one-shot call runs there cannot be reached by that
// call's code: ptrace and their /proc files (mem, environ, maps, fd, cwd,
// oom_score_adj) are refused, and the signals it sends them (SIGSTOP and
// catchable ones) are dropped before the next call runs in one of them:
// that call is ok (not timed out: a stopped spare was woken), has no blocked or
// pending signal, its own /proc/self, cwd /work and /work first on
// sys.path. Spares killed with SIGKILL are replaced. A shell call, which
// the controller runs beside the spares, gets the same answers: the spare
// armed for the next call (the "arm" op, dumpable) is killed before its
// bash starts, so its environ is not readable either.
func TestSpareKernelsOutOfReach(t *testing.T) {
	e := pooledEngine(t, nil)
	img := e.cfg.Images[core.Python]
	call := func(lang core.Language, code string) core.Result {
		return run(t, e, core.Request{Owner: "spare", Language: lang, Image: img, Code: code,
			Limits: core.Limits{Timeout: testscale.D(10 * time.Second)}})
	}
	wait := fmt.Sprintf("WAIT = %.1f\n", testscale.D(3*time.Second).Seconds())
	attack := func(prefix string) []int {
		t.Helper()
		r := call(core.Python, wait+prefix+spareAttack)
		var out struct {
			Spares  []int    `json:"spares"`
			Reached []string `json:"reached"`
		}
		if r.Status != core.StatusOK || json.Unmarshal([]byte(r.Stdout), &out) != nil {
			t.Fatalf("attack call: %s", brief(r))
		}
		if len(out.Spares) == 0 {
			t.Fatalf("no spare kernel beside the call (want at least one): %s", r.Stdout)
		}
		if len(out.Reached) > 0 {
			t.Errorf("the call reached a spare kernel through %v", out.Reached)
		}
		return out.Spares
	}
	victim := func(spares []int, wantOne bool) {
		t.Helper()
		r := call(core.Python, spareVictim) // a stopped spare not woken: status timeout
		f := strings.Fields(r.Stdout)
		if r.Status != core.StatusOK || len(f) != 8 {
			t.Fatalf("call after the attack: %s", brief(r))
		}
		pid := atoiOr0(f[0])
		if wantOne != slices.Contains(spares, pid) {
			t.Errorf("next call's kernel %d, attacked spares %v: want it one of them %v", pid, spares, wantOne)
		}
		if f[1] != "0000000000000000" || f[2] != "0000000000000000" || f[3] != "0000000000000000" {
			t.Errorf("next call's signals: blocked %s pending %s shared pending %s, want none", f[1], f[2], f[3])
		}
		if f[4] != "/work" || f[5] != "/work" || f[6] != "1000" || f[7] != "True" {
			t.Errorf("next call's cwd %s, sys.path[0] %s, oom_score_adj %s, own environ readable %s", f[4], f[5], f[6], f[7])
		}
	}

	spares := attack("")
	victim(spares, true)
	victim(nil, false) // the other attacked spare (or a refill), clean too

	spares = attack("KILL = True\n")
	victim(spares, false)

	sh := call(core.Shell, `for p in /proc/[0-9]*; do grep -qs 'zygote[.]py' $p/cmdline || continue
grep -qsP '^PPid:\t1$' $p/status && continue # the zygote itself
cat $p/environ >/dev/null 2>&1 && echo "reached $p"; kill -STOP ${p#/proc/}; kill -TERM ${p#/proc/}; done; echo done`)
	if sh.Status != core.StatusOK || sh.Stdout != "done\n" {
		t.Fatalf("shell attack: %s", brief(sh))
	}
	victim(nil, false)
}
