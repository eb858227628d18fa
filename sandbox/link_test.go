package sandbox

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/docker/docker/api/types/container"
)

// TestLinkTakesOnePeer: the link takes exactly one connection, from the
// container's uid and pid 1 (this process plays the controller: its own
// uid and pid are the container's); any other uid or pid is refused, and
// once one connection was taken the socket is gone: a later connect fails.
func TestLinkTakesOnePeer(t *testing.T) {
	me := os.Getpid()
	f := &fakeDocker{inspect: func(string) (container.InspectResponse, error) {
		return container.InspectResponse{ContainerJSONBase: &container.ContainerJSONBase{State: &container.State{Pid: me}}}, nil
	}}
	e := New(Config{}, f, nil)
	defer e.removeOwnLinkDir()
	for _, c := range []struct {
		name    string
		uid     int
		pid     int
		refused string
	}{
		{"controller", os.Getuid(), me, ""},
		{"another uid", os.Getuid() + 1, me, "uid"},
		{"another pid", os.Getuid(), me + 1, "pid"},
	} {
		me = c.pid
		l, err := e.openLink()
		if err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(l.path()); err != nil || st.Mode().Perm() != 0o666 || st.Mode()&os.ModeSocket == 0 {
			t.Fatalf("%s: link socket %v %v", c.name, st, err)
		}
		if st, err := os.Stat(l.dir); err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("%s: link folder %v %v", c.name, st, err)
		}
		conn, err := net.Dial("unix", l.path())
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.acceptLink(context.Background(), l, "c1", c.uid, time.Now().Add(10*time.Second))
		switch {
		case c.refused == "" && err != nil:
			t.Fatalf("%s: refused: %v", c.name, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused) || !errors.Is(err, core.ErrUnavailable)):
			t.Fatalf("%s: taken (%v)", c.name, err)
		}
		if got != nil {
			_ = got.Close()
		}
		_ = conn.Close()
		if _, err := os.Stat(l.dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: the link's folder outlived the accept: %v", c.name, err)
		}
		if c2, err := net.Dial("unix", l.path()); err == nil {
			_ = c2.Close()
			t.Fatalf("%s: a second connection reached the link", c.name)
		}
	}
}

// TestLinkNeverConnected: a controller that exits without connecting (an
// image older than the link, a daemon that does not see --link-dir) fails
// the start at once, naming what to do, and leaves nothing behind.
func TestLinkNeverConnected(t *testing.T) {
	f := &fakeDocker{
		create: func(*container.Config, *container.HostConfig) (container.CreateResponse, error) {
			return container.CreateResponse{ID: "c1"}, nil
		},
		start:  func(string) error { return nil },
		exited: true,
	}
	e := newFakeEngine(Config{}, f)
	start := time.Now()
	_, err := e.Exec(context.Background(), core.Request{Language: core.Shell, Code: "true"})
	e.Settle()
	if err == nil || !strings.Contains(err.Error(), "make images") || !strings.Contains(err.Error(), "--link-dir") || time.Since(start) > 10*time.Second {
		t.Fatalf("after %s: %v", time.Since(start), err)
	}
	if f.called("remove") != 1 {
		t.Fatalf("container not removed: %v", f.calls)
	}
	dir, _ := e.linkDir()
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("links left behind: %v", left)
	}
}
