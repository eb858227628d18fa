package sandbox

import (
	"fmt"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// forkBombIPC is a one-shot call that leaves SysV shared memory (attached),
// a semaphore set, a message queue and a POSIX message queue behind, then a
// fork bomb in a session of its own (bash's, or Python's os.fork loop).
const forkBombIPC = `
import ctypes, os, subprocess, time
libc = ctypes.CDLL(None, use_errno=True)
key = 0x5a000 + N
shm = libc.shmget(key, 1 << 16, 0o1000 | 0o600)
libc.shmat.restype = ctypes.c_void_p
libc.shmat(shm, None, 0)
made = [shm >= 0, libc.semget(key, 2, 0o1000 | 0o600) >= 0, libc.msgget(key, 0o1000 | 0o600) >= 0,
        libc.mq_open(b"/left%d" % N, os.O_CREAT | os.O_RDWR, 0o600, None) >= 0]
bomb = ["bash", "-c", ":(){ :|:& };:"] if N % 2 else ["python3", "-c", "import os\nwhile True:\n try: os.fork()\n except OSError: pass"]
subprocess.Popen(bomb, start_new_session=True, stderr=subprocess.DEVNULL)
time.sleep(0.3)
print(made)
`

// leftovers is the next call: the SysV IPC objects, POSIX message queues
// and processes it can see besides itself, the controller and the zygote's.
const leftovers = `
import os
ipc = sum(len(open("/proc/sysvipc/" + k).read().splitlines()) - 1 for k in ("shm", "sem", "msg"))
others = []
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p) in (1, os.getpid()):
        continue
    try:
        cmd = open("/proc/%s/cmdline" % p, "rb").read()
    except OSError:
        continue
    if b"zygote.py" not in cmd:
        others.append(cmd[:30])
print(ipc, len(os.listdir("/dev/mqueue")), others)
`

// TestOneShotLeavesNothing (issue 26): 20 one-shot calls of one owner, each
// ending with SysV and POSIX IPC objects and a fork bomb running; the call
// after each sees no IPC object and no process of it, in the same warm
// container.
func TestOneShotLeavesNothing(t *testing.T) {
	e := pooledEngine(t, nil)
	var container string
	start := time.Now()
	for i := 0; i < 20; i++ {
		r := run(t, e, core.Request{Owner: "bomb", Language: core.Python, Code: fmt.Sprintf("N = %d\n%s", i, forkBombIPC),
			Limits: core.Limits{Timeout: 30 * time.Second}})
		if r.Status != core.StatusOK || r.Stdout != "[True, True, True, True]\n" {
			t.Fatalf("run %d: bomb call: %s", i, brief(r))
		}
		next := run(t, e, core.Request{Owner: "bomb", Language: core.Python, Code: leftovers})
		if next.Status != core.StatusOK || next.Stdout != "0 0 []\n" {
			t.Fatalf("run %d: the next call sees IPC objects, message queues, processes: %s", i, brief(next))
		}
		if container == "" {
			container = r.Container
		}
		if r.Container != container || next.Container != container {
			t.Fatalf("run %d: calls left the owner's warm container %s (%s, %s)", i, container, r.Container, next.Container)
		}
	}
	t.Logf("20 fork bombs cleaned up in %s", time.Since(start).Round(time.Millisecond))
}
