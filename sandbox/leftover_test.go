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
