package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// spinThread starts a thread that burns a core for as long as it may run.
const spinThread = "import threading\ndef spin():\n    while True: pass\nthreading.Thread(target=spin, daemon=True).start()"

// laterThread starts a thread that, a second later (after the call's
// cleanup), starts a process in a session of its own.
const laterThread = `import subprocess, threading, time
def later():
    time.sleep(1)
    subprocess.Popen(["sleep", "4321"], start_new_session=True)
threading.Thread(target=later, daemon=True).start()`

// count4321 counts the processes the later thread started.
const count4321 = "import os\nprint(sum(1 for p in os.listdir('/proc') if p.isdigit() and b'4321' in open('/proc/%s/cmdline' % p, 'rb').read()))"

// TestSessionIdleBetweenCalls (issue 26): without the background policy
// nothing of a session runs between its calls: a thread left spinning uses
// no CPU while the session is idle (measured on the container's cgroup over
// 3 s) and runs again in the next call; a process a thread starts after a
// call's cleanup does not survive the next cleanup. With background, the
// thread keeps running between calls.
func TestSessionIdleBetweenCalls(t *testing.T) {
	e := newTestEngine(t, nil)
	s := openSession(t, e, "o")
	lim := core.Limits{Timeout: 30 * time.Second}
	cpu := func() float64 {
		t.Helper()
		info, err := e.Session("o", s.ID)
		if err != nil || info.CPUMS <= 0 {
			t.Fatalf("session cpu: %+v %v", info, err)
		}
		return info.CPUMS
	}
	idle := func(d time.Duration) float64 {
		t.Helper()
		time.Sleep(200 * time.Millisecond)
		a := cpu()
		time.Sleep(d)
		return cpu() - a
	}
	if r := sexec(t, e, s.ID, "o", core.Python, spinThread, lim); r.Status != core.StatusOK {
		t.Fatalf("spin: %s", brief(r))
	}
	if used := idle(3 * time.Second); used > 150 {
		t.Errorf("the session used %.0f ms of CPU in 3 s between calls, want none", used)
	}
	if r := sexec(t, e, s.ID, "o", core.Python, "import threading\nprint(threading.active_count())", lim); r.Stdout != "2\n" {
		t.Errorf("the spinning thread is gone: %s", brief(r))
	}
	if err := e.RestartSession(context.Background(), "o", s.ID); err != nil {
		t.Fatal(err)
	}

	sexec(t, e, s.ID, "o", core.Python, laterThread, lim)
	time.Sleep(testscale.D(2 * time.Second))
	sexec(t, e, s.ID, "o", core.Python, "import time\ntime.sleep(1.5)", lim)
	if r := sexec(t, e, s.ID, "o", core.Python, count4321, lim); r.Stdout != "0\n" {
		t.Errorf("a process started after a call's cleanup survived the next one: %s", brief(r))
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if r, err := e.SessionExec(ctx, core.Request{SessionID: s.ID, Owner: "o", Language: core.Python, Code: spinThread, Background: true, Limits: lim}); err != nil || r.Status != core.StatusOK {
		t.Fatalf("spin with background: %v %s", err, brief(r))
	}
	if used := idle(2 * time.Second); used < 100 {
		t.Errorf("with background the thread used %.0f ms of CPU in 2 s, want it running", used)
	}
}

// TestSessionCallKeepsWhatItFound: a session call keeps the processes
// that ran before it (left by a background call) and kills what it starts
// itself, whether the sweep before it found the session quiet (then the
// call skips its scan of /proc: nothing but the stopped kernel and the
// controller's own can run) or not.
func TestSessionCallKeepsWhatItFound(t *testing.T) {
	e := newTestEngine(t, nil)
	s := openSession(t, e, "o")
	lim := core.Limits{Timeout: 30 * time.Second}
	count := func(mark string) string {
		t.Helper()
		r := sexec(t, e, s.ID, "o", core.Python, "import os\nprint(sum(1 for p in os.listdir('/proc') if p.isdigit() and b'"+mark+"' in open('/proc/%s/cmdline' % p, 'rb').read()))", lim)
		return r.Stdout
	}
	// Quiet calls: the next one takes no /proc scan; what it starts dies.
	for i := 0; i < 2; i++ {
		sexec(t, e, s.ID, "o", core.Python, "print(1)", lim)
	}
	sexec(t, e, s.ID, "o", core.Python, "import subprocess\nsubprocess.Popen(['sleep', '4323'])", lim)
	if got := count("4323"); got != "0\n" {
		t.Errorf("a process a call started after quiet calls survived it: %q processes", got)
	}
	// A background call's process is kept by the calls after it.
	sexec(t, e, s.ID, "o", core.Python, "print(1)", lim)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if r, err := e.SessionExec(ctx, core.Request{SessionID: s.ID, Owner: "o", Language: core.Python, Background: true, Limits: lim,
		Code: "import subprocess\nsubprocess.Popen(['sleep', '4322'])"}); err != nil || r.Status != core.StatusOK {
		t.Fatalf("background call: %v %s", err, brief(r))
	}
	for i := 0; i < 3; i++ {
		if got := count("4322"); got != "1\n" {
			t.Fatalf("call %d after the background call: %q processes of it, want 1 kept", i+1, got)
		}
	}
}
