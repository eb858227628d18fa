package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/airlock-dev/airlock/internal/testscale"
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
	for deadline := time.Now().Add(testscale.D(20 * time.Second)); ; {
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
	case <-time.After(testscale.D(20 * time.Second)):
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

// Fill makes the server really full: maxmemory a little above what it uses
// now (noeviction), then values written until Redis refuses one for lack
// of memory, so every command that may grow memory is refused from then
// on. The returned free deletes the values and lifts the limit; it is also
// run at the end of the test.
func (s *Server) Fill(t testing.TB) (free func()) {
	t.Helper()
	c := s.Client(t)
	ctx := context.Background()
	setMax := func(kv ...string) {
		for i := 0; i < len(kv); i += 2 {
			if err := c.ConfigSet(ctx, kv[i], kv[i+1]).Err(); err != nil {
				t.Fatalf("redistest: CONFIG SET %s: %v", kv[i], err)
			}
		}
	}
	setMax("maxmemory-policy", "noeviction", "maxmemory", strconv.FormatInt(usedMemory(t, c)+1<<20, 10))
	value := strings.Repeat("x", 32<<10)
	n := 0
	for ; ; n++ {
		err := c.Set(ctx, fmt.Sprintf("redistest:fill:%d", n), value, 0).Err()
		if err != nil && strings.HasPrefix(err.Error(), "OOM ") {
			break
		}
		if err != nil {
			t.Fatalf("redistest: fill: %v", err)
		}
		if n > 10000 {
			t.Fatalf("redistest: 320 MiB written and Redis is not full")
		}
	}
	// Just past the limit, freed client buffers would let small writes
	// in again: the limit goes a margin below what the data now uses.
	setMax("maxmemory", strconv.FormatInt(usedMemory(t, c)-256<<10, 10))
	var once sync.Once
	free = func() {
		once.Do(func() {
			for i := 0; i < n; i += 500 {
				keys := make([]string, 0, 500)
				for k := i; k < min(i+500, n); k++ {
					keys = append(keys, fmt.Sprintf("redistest:fill:%d", k))
				}
				if err := c.Del(ctx, keys...).Err(); err != nil {
					t.Errorf("redistest: free: %v", err)
				}
			}
			if err := c.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
				t.Errorf("redistest: free: CONFIG SET maxmemory: %v", err)
			}
		})
	}
	t.Cleanup(free)
	return free
}

// usedMemory is the server's used_memory (INFO memory).
func usedMemory(t testing.TB, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatalf("redistest: INFO memory: %v", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n
			}
		}
	}
	t.Fatalf("redistest: no used_memory in INFO memory")
	return 0
}

// Pause stops the server process with SIGSTOP, as a Redis stalled by its
// host would: connections stay open and nothing is answered. The returned
// resume (SIGCONT) is also run at the end of the test.
func (s *Server) Pause(t testing.TB) (resume func()) {
	t.Helper()
	if s.cmd == nil {
		t.Fatal("redistest: pause: the server is not running")
	}
	p := s.cmd.Process
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("redistest: pause: %v", err)
	}
	var once sync.Once
	resume = func() { once.Do(func() { _ = p.Signal(syscall.SIGCONT) }) }
	t.Cleanup(resume)
	return resume
}
