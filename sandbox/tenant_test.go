package sandbox

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
)

func TestUIDAllocator(t *testing.T) {
	a := newUIDAllocator(IDRange{First: 500, Last: 502})
	seen := map[int]bool{}
	for i := 0; i < 3; i++ {
		uid, err := a.take()
		if err != nil || uid < 500 || uid > 502 || seen[uid] {
			t.Fatalf("take %d: %d %v (seen %v)", i, uid, err, seen)
		}
		seen[uid] = true
		a.bind(uid, "c"+strconv.Itoa(uid))
	}
	if _, err := a.take(); !errors.Is(err, core.ErrBusy) {
		t.Fatalf("exhausted range: %v, want ErrBusy", err)
	}
	a.removed("c501")
	if uid, err := a.take(); err != nil || uid != 501 {
		t.Fatalf("freed uid not handed out again: %d %v", uid, err)
	}
	a.release(501)
	if a.inUse() != 2 {
		t.Fatalf("in use %d, want 2", a.inUse())
	}
	for _, bad := range []IDRange{{0, 10}, {10, 9}, {1, 1 << 31}} {
		if _, err := newUIDAllocator(bad).take(); !errors.Is(err, core.ErrUnavailable) {
			t.Errorf("range %v accepted: %v", bad, err)
		}
	}
}

func TestShmBytes(t *testing.T) {
	if shmBytes(1<<30) != MaxShmBytes || shmBytes(4<<20) != 4<<20 || shmBytes(0) != MaxShmBytes {
		t.Fatal("shm size is not min(tmpfs, 16 MiB)")
	}
}

func sessionRun(t *testing.T, e *Engine, owner, id, code string) core.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := e.SessionExec(ctx, core.Request{Owner: owner, SessionID: id, Code: code})
	if err != nil || r.Status != core.StatusOK {
		t.Fatalf("session exec %q: %v %s", code, err, brief(r))
	}
	return r
}

// TestOwnUIDPerContainer runs two sessions at once: they have different
// uids from the range, and one holding every inotify instance its uid may
// have does not stop the other from creating one.
func TestOwnUIDPerContainer(t *testing.T) {
	e := newTestEngine(t, func(c *Config) { c.UIDRange = IDRange{First: 71000, Last: 71099} })
	ctx := context.Background()
	var ids [2]string
	var uids [2]int
	for i := range ids {
		info, rej, err := e.OpenSession(ctx, core.Request{Owner: "o" + strconv.Itoa(i)})
		if err != nil || rej != nil {
			t.Fatalf("open: %v %+v", err, rej)
		}
		ids[i] = info.ID
		r := sessionRun(t, e, "o"+strconv.Itoa(i), info.ID, "import os; print(os.getuid(), os.getgid(), os.environ['HOME'])")
		f := strings.Fields(r.Stdout)
		uids[i], _ = strconv.Atoi(f[0])
		if len(f) != 3 || uids[i] < 71000 || uids[i] > 71099 || f[1] != f[0] || f[2] != "/tmp" {
			t.Fatalf("container %d runs as %q, want a uid:gid of 71000-71099 and HOME=/tmp", i, r.Stdout)
		}
	}
	if uids[0] == uids[1] {
		t.Fatalf("two live containers share uid %d", uids[0])
	}
	// Files put and got still work as a uid without a passwd entry.
	if err := e.PutFile(ctx, "o0", ids[0], "in/data.txt", []byte("payload")); err != nil {
		t.Fatal(err)
	}
	sessionRun(t, e, "o0", ids[0], "open('/work/in/out.txt','w').write(open('/work/in/data.txt').read().upper())")
	if got, err := e.GetFile(ctx, "o0", ids[0], "in/out.txt"); err != nil || string(got) != "PAYLOAD" {
		t.Fatalf("get: %q %v", got, err)
	}
	limit, err := os.ReadFile("/proc/sys/fs/inotify/max_user_instances")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(limit)))
	if n <= 0 || n > 200 {
		t.Skipf("fs.inotify.max_user_instances is %d: the test holds all of them within nofile 256", n)
	}
	const lib = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
	r := sessionRun(t, e, "o0", ids[0], lib+"held = []\nwhile True:\n    fd = libc.inotify_init()\n    if fd < 0:\n        break\n    held.append(fd)\nprint(len(held), ctypes.get_errno())")
	if got := strings.TrimSpace(r.Stdout); got != strconv.Itoa(n)+" 24" {
		t.Fatalf("container A got %q inotify instances, want all %d then EMFILE (24)", got, n)
	}
	r = sessionRun(t, e, "o1", ids[1], lib+"fd = libc.inotify_init()\nprint(fd >= 0, ctypes.get_errno())")
	if !strings.HasPrefix(r.Stdout, "True") {
		t.Fatalf("container B cannot create an inotify instance while A holds its uid's all: %q", r.Stdout)
	}
	for i, id := range ids {
		if err := e.CloseSession("o"+strconv.Itoa(i), id); err != nil {
			t.Fatal(err)
		}
	}
	e.Settle()
	if u := e.uids.inUse(); u != 0 {
		t.Fatalf("%d uids still reserved after every container was removed", u)
	}
}

func TestShmCapped(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	e := newTestEngine(t, nil)
	for _, tc := range []struct {
		tmpfs int64
		want  string
	}{{0, "16384"}, {8 << 20, "8192"}} {
		// The container's score is its pid 1's, the controller's; the code's
		// own is 1000, so the OOM killer picks it first inside the container.
		r := run(t, e, core.Request{Language: core.Shell, Code: "df -k /dev/shm | tail -1 | awk '{print $2}'; cat /proc/1/oom_score_adj /proc/self/oom_score_adj",
			Limits: core.Limits{TmpfsBytes: tc.tmpfs}})
		f := strings.Fields(r.Stdout)
		if r.Status != core.StatusOK || len(f) != 3 || f[0] != tc.want || f[1] != strconv.Itoa(SandboxOOMScoreAdj) || f[2] != "1000" {
			t.Fatalf("tmpfs %d: /dev/shm size and oom_score_adj of the controller and the code %q, want %s KiB, %d and 1000: %s", tc.tmpfs, r.Stdout, tc.want, SandboxOOMScoreAdj, brief(r))
		}
	}
}

// uidForTest is the range uid the engine reserved for b's container.
func (b *box) uidForTest(e *Engine) int {
	e.uids.mu.Lock()
	defer e.uids.mu.Unlock()
	return e.uids.byCtr[b.id]
}

func atoiOr0(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
