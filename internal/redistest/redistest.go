package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server process owned by one test.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	aof  bool
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts a private redis-server on a free loopback port, with AOF
// (appendfsync everysec) when aof is true; it skips (fails in CI) when
// redis-server is not installed.
func Start(t testing.TB, aof bool) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server is required in CI: %v", err)
		}
		t.Skipf("redis-server not installed (apt-get install redis-server): %v", err)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir(), port: FreePort(t), aof: aof}
	s.Run()
	t.Cleanup(s.Stop)
	return s
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", s.port) }

// Run launches the process and waits until it answers PING.
func (s *Server) Run() {
	s.t.Helper()
	aof := "no"
	if s.aof {
		aof = "yes"
	}
	s.cmd = exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--save", "", "--appendonly", aof, "--daemonize", "no",
		"--logfile", filepath.Join(s.dir, "redis.log"))
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	s.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { _ = c.Wait(); close(done) }(s.cmd, s.done)
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", s.port), MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(20 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			s.t.Fatalf("redis-server exited: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server did not answer: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop shuts the server down (SIGTERM, so AOF is flushed) and waits.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Restart stops the server, leaves it down for downtime, and starts it
// again on the same port and directory.
func (s *Server) Restart(downtime time.Duration) {
	s.Stop()
	time.Sleep(downtime)
	s.Run()
}

// Client returns a client closed at the end of the test.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", s.port)})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Port is the server's TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// PID is the redis-server process's id (to stop it with SIGSTOP, say).
func (s *Server) PID() int { return s.cmd.Process.Pid }
