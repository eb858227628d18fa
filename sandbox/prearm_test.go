package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// hostProc is one process of a container as the host's /proc shows it.
type hostProc struct {
	pid, ppid, nsPid int    // host pid, host parent, pid inside the container
	state            string // the State line's first letter (Z: a zombie)
	sigBlk           string // blocked signal mask
	oomAdj           string // oom_score_adj
	cmdline          string
}

// hostProcs lists the processes whose /proc/PID/status names a pid in the
// container's namespace (NSpid with two entries), keyed by host pid.
func hostProcs(t *testing.T) map[int]hostProc {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]hostProc{}
	for _, d := range dirs {
		status, err := os.ReadFile(filepath.Join(d, "status"))
		if err != nil {
			continue
		}
		var p hostProc
		for _, line := range strings.Split(string(status), "\n") {
			k, v, ok := strings.Cut(line, ":\t")
			if !ok {
				continue
			}
			switch k {
			case "Pid":
				p.pid = atoiOr0(v)
			case "PPid":
				p.ppid = atoiOr0(v)
			case "State":
				p.state, _, _ = strings.Cut(v, " ")
			case "SigBlk":
				p.sigBlk = v
			case "NSpid":
				if f := strings.Fields(v); len(f) == 2 {
					p.nsPid = atoiOr0(f[1])
				}
			}
		}
		adj, _ := os.ReadFile(filepath.Join(d, "oom_score_adj"))
		cmd, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		p.oomAdj = strings.TrimSpace(string(adj))
		p.cmdline = strings.ReplaceAll(string(cmd), "\x00", " ")
		if p.nsPid != 0 {
			out[p.pid] = p
		}
	}
	return out
}

// spareStates are the zygote's children in the container whose controller
// has host pid ctl: "armed" (oom_score_adj 1000, no signal blocked) or
// "waiting" (500, every signal blocked), by pid in the container.
func spareStates(t *testing.T, ctl int) map[int]string {
	t.Helper()
	procs := hostProcs(t)
	zygote := 0
	for _, p := range procs {
		if p.ppid == ctl && strings.Contains(p.cmdline, "zygote.py") {
			zygote = p.pid
		}
	}
	out := map[int]string{}
	for _, p := range procs {
		if zygote == 0 || p.ppid != zygote || p.state == "Z" || p.state == "X" {
			continue
		}
		blocked, _ := strconv.ParseUint(p.sigBlk, 16, 64)
		switch {
		case p.oomAdj == "1000" && blocked == 0:
			out[p.nsPid] = "armed"
		case p.oomAdj != "1000" && blocked != 0:
			out[p.nsPid] = "waiting"
		default:
			out[p.nsPid] = fmt.Sprintf("half armed (oom_score_adj %s, blocked %s)", p.oomAdj, p.sigBlk)
		}
	}
	return out
}

// TestSpareArmedBeforeItsCall: between one-shot calls the spare the next
// call takes is already armed (oom_score_adj 1000, signals unblocked: the
// "arm" op, off the call's path), every other spare still waits unarmed
// (every signal blocked), and the next call runs in exactly that armed
// spare. A shell call kills the armed spare before its bash starts (user
// code never runs beside an armed spare) and arms none after it (an owner
// of shell calls would pay a fork for each); the next Python call does.
func TestSpareArmedBeforeItsCall(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("reads the container's processes in the host's /proc: needs root, as CI runs")
		}
		t.Skip("reads the container's processes in the host's /proc (root)")
	}
	e := pooledEngine(t, nil)
	img := e.cfg.Images[core.Python]
	call := func(lang core.Language, code string) core.Result {
		t.Helper()
		r := run(t, e, core.Request{Owner: "prearm", Language: lang, Image: img, Code: code,
			Limits: core.Limits{Timeout: testscale.D(10 * time.Second)}})
		if r.Status != core.StatusOK {
			t.Fatalf("call: %s", brief(r))
		}
		return r
	}
	const whoami = "import os; print(os.getpid())"
	first := call(core.Python, whoami)
	ins, err := e.docker.ContainerInspect(context.Background(), first.Container)
	if err != nil || ins.State == nil || ins.State.Pid == 0 {
		t.Fatalf("inspect %s: %v", first.Container, err)
	}
	ctl := ins.State.Pid
	// armedNow waits (the refill and the arm op follow the call's answer) until
	// one spare is armed and the rest wait; it returns the armed one's pid. The
	// kernel of the call just answered (last), killed, may still be exiting.
	armedNow := func(after string, last int) int {
		t.Helper()
		var states map[int]string
		for end := time.Now().Add(testscale.D(10 * time.Second)); ; time.Sleep(20 * time.Millisecond) {
			states = spareStates(t, ctl)
			delete(states, last)
			armed, waiting := 0, 0
			for pid, s := range states {
				switch s {
				case "armed":
					armed = pid
				case "waiting":
					waiting++
				}
			}
			if armed != 0 && waiting == len(states)-1 {
				return armed
			}
			if time.Now().After(end) {
				t.Fatalf("after %s: spares %v, want one armed and the others waiting", after, states)
			}
		}
	}
	last := atoiOr0(strings.TrimSpace(first.Stdout))
	for i := 0; i < 3; i++ {
		armed := armedNow(fmt.Sprintf("call %d", i+1), last)
		r := call(core.Python, whoami)
		if r.Container != first.Container {
			t.Fatalf("call ran in %s, want the owner's container %s", r.Container, first.Container)
		}
		if last = atoiOr0(strings.TrimSpace(r.Stdout)); last != armed {
			t.Errorf("call %d ran in kernel %d, want the armed spare %d", i+2, last, armed)
		}
	}
	before := armedNow("the python calls", last)
	sh := call(core.Shell, "echo $$")
	if sh.Container != first.Container {
		t.Fatalf("shell call ran in %s, want %s", sh.Container, first.Container)
	}
	for end := time.Now().Add(testscale.D(10 * time.Second)); ; time.Sleep(20 * time.Millisecond) {
		if _, alive := spareStates(t, ctl)[before]; !alive {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("spare %d, armed before the shell call, is still there after it: want it killed", before)
		}
	}
	for pid, s := range spareStates(t, ctl) {
		if s != "waiting" {
			t.Errorf("after the shell call spare %d is %s, want none armed (the next call is likely a shell call too)", pid, s)
		}
	}
	r := call(core.Python, whoami)
	if after := armedNow("a python call after the shell call", atoiOr0(strings.TrimSpace(r.Stdout))); after == before {
		t.Errorf("spare %d armed before the shell call is armed again, want another", before)
	}
}
