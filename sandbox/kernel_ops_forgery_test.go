package sandbox

import (
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// TestForgeryThroughIntrospect (issues 26, 31): an introspection runs user
// code in the session's kernel (here a patched Jedi,
// attacks/introspect_thief.py) that walks the kernel's frames and finds the
// question's token; every question has a fresh token, so a later call's
// done forged with it (attacks/introspect_forge.py) is ignored and that call
// reports its own exit 7. The question resumes the stopped kernel and stops
// it again: a thread it started uses no CPU afterwards, and a process it
// started does not survive it.
func TestForgeryThroughIntrospect(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	e := newTestEngine(t, nil)
	s := openSession(t, e, "o")
	lim := core.Limits{Timeout: 30 * time.Second}
	if r := sexec(t, e, s.ID, "o", core.Python, attackCode(t, "introspect_thief.py"), lim); r.Stdout != "armed\n" {
		t.Fatalf("thief: %s", brief(r))
	}
	if m, err := introspect(t, e, s.ID, "x", core.IntrospectComplete, 1); err != nil || m["status"] != "ok" {
		t.Fatalf("introspection through the thief: %v %v", m, err)
	}
	time.Sleep(200 * time.Millisecond)
	info, err := e.Session("o", s.ID)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(testscale.D(2 * time.Second))
	after, err := e.Session("o", s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if used := after.CPUMS - info.CPUMS; used > 150 {
		t.Errorf("a thread started during the introspection used %.0f ms of CPU after it, want none", used)
	}
	if r := sexec(t, e, s.ID, "o", core.Python, "import threading, os\nprint(threading.active_count(), len(STOLEN) > 0)\n"+
		"print(sum(1 for p in os.listdir('/proc') if p.isdigit() and b'4322' in open('/proc/%s/cmdline' % p, 'rb').read()))", lim); r.Stdout != "2 True\n0\n" {
		t.Fatalf("after the introspection (want the thread, a stolen token, no sleep 4322): %s", brief(r))
	}
	r := sexec(t, e, s.ID, "o", core.Python, attackCode(t, "introspect_forge.py"), lim)
	if r.Status != core.StatusError || r.ExitCode != 7 || r.Stdout != "forged\n" {
		t.Fatalf("a done forged with the question's token changed the call's report: %s", brief(r))
	}
}
