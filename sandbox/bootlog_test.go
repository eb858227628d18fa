package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// TestNotReadyQuotesLog: a controller that connects to its link and dies
// before its ready frame fails the start with the end of the container's
// log (where its stderr goes) in the error: bounded to its tail, with a
// secret in a known format redacted.
func TestNotReadyQuotesLog(t *testing.T) {
	var log bytes.Buffer
	w := stdcopy.NewStdWriter(&log, stdcopy.Stderr)
	_, _ = w.Write([]byte(strings.Repeat("early noise that scrolls away\n", 500)))
	_, _ = w.Write([]byte("Traceback (most recent call last):\nImportError: zygote preload failed, token ghp_0123456789abcdefghijABCDEFGHIJ012345\n"))
	f := &fakeDocker{
		create: func(*container.Config, *container.HostConfig) (container.CreateResponse, error) {
			return container.CreateResponse{ID: "c1"}, nil
		},
		start: func(string) error { return nil },
		serve: func(_ string, conn net.Conn) { _ = conn.Close() }, // connects, then dies
		logs:  func(string) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(log.Bytes())), nil },
	}
	e := newFakeEngine(Config{}, f)
	defer e.removeOwnLinkDir()
	_, err := e.Exec(context.Background(), core.Request{Language: core.Shell, Code: "true"})
	e.Settle()
	if err == nil || !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("start did not fail unavailable: %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"did not become ready", "ImportError: zygote preload failed", "[REDACTED"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "ghp_0123456789") {
		t.Errorf("the secret was quoted: %s", msg)
	}
	if len(msg) > bootLogTail+1024 {
		t.Errorf("error of %d bytes: the log is not bounded", len(msg))
	}
}
