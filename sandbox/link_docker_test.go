package sandbox

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/core"
)

// linkAttack is user code going after the link: connect to the mounted
// socket, reach the controller's fds through /proc/1, and write forged
// done frames everywhere a frame could once be read from (its stdout, the
// controller's stdout and stderr, the container's log). It reports what
// it got as JSON on its last line and exits 3.
const linkAttack = `
import errno, json, os, socket, sys
out = {"opened": []}
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect("/run/airlock/link.sock")
    s.sendall(b'{"id": "x", "op": "ping"}\n')
    out["connect"] = "connected"
except OSError as e:
    out["connect"] = errno.errorcode.get(e.errno, str(e.errno))
try:
    os.listdir("/proc/1/fd")
    out["fds"] = "listed"
except OSError as e:
    out["fds"] = errno.errorcode.get(e.errno, str(e.errno))
line = (json.dumps({"t": "done", "id": "x", "status": "ok", "exit_code": 0}) + "\n").encode()
for n in range(64):
    try:
        fd = os.open("/proc/1/fd/%d" % n, os.O_RDWR | os.O_NONBLOCK)
        out["opened"].append(n)
        os.write(fd, line)
    except OSError:
        pass
for p in ("/proc/1/fd/1", "/proc/1/fd/2", "/dev/stdout", "/dev/stderr"):
    try:
        with open(p, "wb") as f:
            f.write(line)
    except OSError:
        pass
sys.stdout.write(line.decode())
sys.stdout.flush()
print(json.dumps(out))
sys.exit(3)
`

// TestLinkUnreachable: user code, in a one-shot call and in a session,
// cannot connect to the link (its socket is closed once the controller
// connected), cannot open the controller's fds (non-dumpable), and a done
// frame it forges anywhere is only its own output: the call still ends
// with its own exit status, and the next call works.
func TestLinkUnreachable(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	e := pooledEngine(t, nil)
	check := func(t *testing.T, r core.Result, next func() core.Result) {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
		var got struct {
			Connect string `json:"connect"`
			FDs     string `json:"fds"`
			Opened  []int  `json:"opened"`
		}
		if r.Status != core.StatusError || r.ExitCode != 3 || len(lines) < 2 || json.Unmarshal([]byte(lines[len(lines)-1]), &got) != nil {
			t.Fatalf("the attack changed the caller's view: %s", brief(r))
		}
		if got.Connect != "ECONNREFUSED" && got.Connect != "ENOENT" {
			t.Fatalf("user code connected to the link: %+v", got)
		}
		if got.FDs != "EACCES" || len(got.Opened) != 0 {
			t.Fatalf("user code reached the controller's fds: %+v", got)
		}
		if r2 := next(); r2.Status != core.StatusOK || r2.Stdout != "42\n" {
			t.Fatalf("the call after the attack: %s", brief(r2))
		}
	}
	t.Run("oneshot", func(t *testing.T) {
		r := run(t, e, core.Request{Owner: "A", Language: core.Python, Code: linkAttack})
		check(t, r, func() core.Result {
			return run(t, e, core.Request{Owner: "A", Language: core.Python, Code: "print(6 * 7)"})
		})
	})
	t.Run("session", func(t *testing.T) {
		s := openSession(t, e, "o")
		r := sexec(t, e, s.ID, "o", core.Python, linkAttack, core.Limits{})
		check(t, r, func() core.Result { return sexec(t, e, s.ID, "o", core.Python, "print(6 * 7)", core.Limits{}) })
		if r := sexec(t, e, s.ID, "o", core.Shell, "python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect(\"/run/airlock/link.sock\")' 2>&1 | tail -1", core.Limits{}); !strings.Contains(r.Stdout, "Connection refused") {
			t.Fatalf("a shell call's connect: %s", brief(r))
		}
	})
}
