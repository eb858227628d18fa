package queue

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

// redisServer is a redis-server process owned by one test.
type redisServer struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	aof  bool
	cmd  *exec.Cmd
	done chan struct{}
}

// startRedis starts a private redis-server on a free loopback port; it
// skips (fails in CI) when redis-server is not installed.
func startRedis(t testing.TB, aof bool) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server is required in CI: %v", err)
		}
		t.Skipf("redis-server not installed (apt-get install redis-server): %v", err)
	}
	s := &redisServer{t: t, bin: bin, dir: t.TempDir(), port: freePort(t), aof: aof}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// url is the server's redis:// URL.
func (s *redisServer) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", s.port) }

// start launches the process and waits until it answers PING.
func (s *redisServer) start() {
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

// stop shuts the server down (SIGTERM, so AOF is flushed) and waits.
func (s *redisServer) stop() {
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

// restart stops the server, leaves it down for downtime, and starts it
// again on the same port and directory.
func (s *redisServer) restart(downtime time.Duration) {
	s.stop()
	time.Sleep(downtime)
	s.start()
}

// client returns a client closed at the end of the test.
func (s *redisServer) client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", s.port)})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
