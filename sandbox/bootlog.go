package sandbox

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/secrets"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// bootLogTail bounds how much of a container's log a start error quotes.
const bootLogTail = 2048

// bootLogSettle bounds how long a failed start waits for the container's
// log to end (a controller that failed exits at once) before quoting it.
const bootLogSettle = 2 * time.Second

// bootLog follows a booting container's log (the controller's stderr goes
// only there) into a bounded tail, so that a start that fails can say why:
// a container removes itself once it exits, its log with it.
type bootLog struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	tail   []byte
}

// followBootLog starts following container id's log until stop or its end.
func (e *Engine) followBootLog(ctx context.Context, id string) *bootLog {
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l := &bootLog{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		rc, err := e.docker.ContainerLogs(lctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
		if err != nil {
			return
		}
		defer rc.Close()
		_, _ = stdcopy.StdCopy(l, l, rc)
	}()
	return l
}

// Write keeps the last bootLogTail bytes written.
func (l *bootLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tail = append(l.tail, p...)
	if over := len(l.tail) - bootLogTail; over > 0 {
		l.tail = append(l.tail[:0], l.tail[over:]...)
	}
	return len(p), nil
}

// stop ends the following (the container booted).
func (l *bootLog) stop() { l.cancel() }

// text waits (bootLogSettle at most) for the log to end, stops following
// and returns its tail for an error message: valid UTF-8, known secret
// formats redacted as in every result, "" when the log was empty.
func (l *bootLog) text() string {
	select {
	case <-l.done:
	case <-time.After(bootLogSettle):
	}
	l.cancel()
	<-l.done
	l.mu.Lock()
	t := string(l.tail)
	l.mu.Unlock()
	t = strings.TrimSpace(strings.ToValidUTF8(t, "\uFFFD"))
	if t == "" {
		return ""
	}
	if len(l.tail) >= bootLogTail {
		t = "…" + t
	}
	return secrets.RedactPatterns(t)
}

// withLog appends a failed start's log tail to its message.
func (l *bootLog) withLog(msg string) string {
	if t := l.text(); t != "" {
		return msg + "; the end of the container's log:\n" + t
	}
	return msg + "; the container's log was empty or already gone"
}
