package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/airlock-dev/airlock/queue"
)

// redisServer is a private redis-server on a loopback port with AOF on,
// its data in a temporary folder.
type redisServer struct {
	*server
	url string
	dir string
}

// startRedis starts redis-server with AOF on (--appendonly yes) and RDB
// snapshots off (--save with an empty argument).
func startRedis(ctx context.Context, workdir string) (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not installed: %w", err)
	}
	if err := os.MkdirAll(workdir, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(workdir, "redis-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	srv, err := startServer(filepath.Join(dir, "redis.log"), os.Environ(), bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--appendonly", "yes", "--save", "", "--daemonize", "no")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r := &redisServer{server: srv, url: fmt.Sprintf("redis://127.0.0.1:%d/0", port), dir: dir}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !srv.exited(); {
		if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
			conn.Close()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	c, err := queue.NewRedisClient(r.url, time.Second)
	if err != nil {
		r.close()
		return nil, err
	}
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if err := c.Ping(ctx).Err(); err == nil {
			return r, nil
		} else if time.Now().After(deadline) || srv.exited() {
			r.close()
			return nil, fmt.Errorf("redis-server did not answer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// close stops the server and removes its data.
func (r *redisServer) close() {
	r.stop(10 * time.Second)
	os.RemoveAll(r.dir)
}
