package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// attackCode is a call's code shared with drive.py
// (images/python/tests/attacks).
func attackCode(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "images", "python", "tests", "attacks", name))
	if err != nil {
		t.Fatalf("attack code: %v", err)
	}
	return string(b)
}

// TestOneShotLeavesNothing (issue 26): 20 one-shot calls of one owner, each
// ending with SysV and POSIX IPC objects and a fork bomb running
// (attacks/fork_bomb_ipc.py); the call after each (attacks/leftovers.py) sees
// no IPC object and no process of it, in the same warm container.
func TestOneShotLeavesNothing(t *testing.T) {
	e := pooledEngine(t, nil)
	bomb, left := attackCode(t, "fork_bomb_ipc.py"), attackCode(t, "leftovers.py")
	start := time.Now()
	warmPairs(t, e, 20, func(i int) core.Request {
		return core.Request{Owner: "bomb", Language: core.Python, Code: fmt.Sprintf("N = %d\n%s", i, bomb),
			Limits: core.Limits{Timeout: 30 * time.Second}}
	}, "[True, True, True, True]\n", core.Request{Owner: "bomb", Language: core.Python, Code: left}, "0 0 []\n",
		"the next call sees IPC objects, message queues, processes")
	t.Logf("20 fork bombs cleaned up in %s", time.Since(start).Round(time.Millisecond))
}

// TestOneShotKernelKilledAfterItsAnswer: a one-shot call that left nothing
// but its kernel is answered before that kernel's kill (the exit of its
// address space is off the reply's path), so what the kernel still does then
// must not show. Each acting call leaves a thread of its kernel rewriting a
// file under /work, a MiB at a time (a write the stop may find under way),
// and in every other one a kept copy of its stdout (a pipe not at EOF: the
// kill comes first, and what was written through it arrives). The call after
// each sees no process of it and nothing of it under /work.
func TestOneShotKernelKilledAfterItsAnswer(t *testing.T) {
	e := pooledEngine(t, nil)
	const thread = `import os, threading
running = threading.Event()
def late():
    while True:
        with open("/work/late", "w") as f:
            f.write("x" * (1 << 20))
        running.set()
threading.Thread(target=late, daemon=True).start()
running.wait()
`
	// The call after: no IPC object, queue or process of the last call
	// (attacks/leftovers.py), and nothing of it under /work.
	check := core.Request{Owner: "retire", Language: core.Python,
		Code: attackCode(t, "leftovers.py") + "print(sorted(os.listdir('/work')))\n"}
	warmPairs(t, e, 20, func(i int) core.Request {
		code := thread + "print('main')\n"
		if i%2 == 1 {
			code = thread + "kept = os.dup(1)\n_ = os.write(kept, b'main\\n')\n"
		}
		return core.Request{Owner: "retire", Language: core.Python, Code: code}
	}, "main\n", check, "0 0 []\n['outputs']\n", "the next call sees the last call's kernel, its thread or its files")
}
