package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// TestBusyScriptHogsAndCleansUp: scripts/busy.sh (make test-busy) runs its
// command beside AIRLOCK_BUSY_HOGS busy loops that really burn CPU while
// the command runs, exits with the command's status, and leaves no loop
// behind.
func TestBusyScriptHogsAndCleansUp(t *testing.T) {
	t.Parallel()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(t.TempDir(), "running")
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "busy.sh"), "sh", "-c", `touch "$0"; sleep 1; exit 7`, mark)
	cmd.Env = append(os.Environ(), "AIRLOCK_BUSY_HOGS=2")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	poll(t, testscale.D(10*time.Second), "the command to start", func() bool { _, err := os.Stat(mark); return err == nil })
	m := regexp.MustCompile(`\(pids ([0-9 ]+)\)`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("busy.sh did not name its hogs: %q", stderr.String())
	}
	pids := strings.Fields(m[1])
	if len(pids) != 2 {
		t.Fatalf("hogs %v, want 2", pids)
	}
	for _, p := range pids {
		before := cpuTicks(t, p)
		time.Sleep(300 * time.Millisecond)
		if after := cpuTicks(t, p); after <= before {
			t.Errorf("hog %s used no CPU while the command ran (%d then %d ticks)", p, before, after)
		}
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Fatalf("busy.sh exited %v, want the command's status 7", err)
	}
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		if syscall.Kill(pid, 0) == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("hog %d outlived busy.sh", pid)
		}
	}
}

// cpuTicks reads the user+system clock ticks of process pid.
func cpuTicks(t *testing.T, pid string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		t.Fatalf("hog %s: %v", pid, err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return u + k
}
