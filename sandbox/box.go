package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
)

// Reply budgets: a runner reply line may carry artifacts or a file, base64
// encoded; anything longer is a protocol violation, never buffered.
const (
	smallReply = 1 << 20  // ping, put, ready
	bootOutput = 64 << 10 // output kept while the runner starts
)

// replyBudget is the longest reply line a request may produce.
func (e *Engine) replyBudget(op string) int {
	switch op {
	case "exec":
		return e.cfg.MaxArtifactBytes/3*4 + smallReply
	case "get":
		return e.cfg.MaxFileBytes/3*4 + smallReply
	}
	return smallReply
}

// RunnerPath is the in-container runner of runner-capable images; an image
// advertises it with the label airlock.runner.
const RunnerPath = "/opt/airlock/runner.py"

// box is one started container whose resident runner takes requests on its
// attached stdin. A box serves one execution or one session, then is destroyed.
type box struct {
	id      string
	image   string
	limits  core.Limits
	created time.Time
	hj      types.HijackedResponse
	dm      demux
	sp      splitter
	pending []byte // stdout that followed the last reply
	mu      sync.Mutex
	dead    atomic.Bool // set once the container is killed or gone
}

// runnerRequest is one line on the runner's stdin.
type runnerRequest struct {
	ID               string `json:"id"`
	Op               string `json:"op"`
	Lang             string `json:"lang,omitempty"`
	Code             string `json:"code,omitempty"`
	Path             string `json:"path,omitempty"`
	Data             []byte `json:"data,omitempty"`
	MaxBytes         int    `json:"max_bytes,omitempty"`
	MaxArtifacts     int    `json:"max_artifacts,omitempty"`
	MaxArtifactBytes int    `json:"max_artifact_bytes,omitempty"`
}

// runnerReply is the JSON after a marker.
type runnerReply struct {
	ID        string          `json:"id"`
	Error     string          `json:"error"`
	Status    string          `json:"status"`
	ExitCode  int             `json:"exit_code"`
	Artifacts []core.Artifact `json:"artifacts"`
	Warnings  []string        `json:"warnings"`
	Size      int64           `json:"size"`
	Data      []byte          `json:"data"`
}

// callOutcome is what one runner call produced.
type callOutcome struct {
	reply    runnerReply
	stdout   *capped
	stderr   *capped
	timedOut bool // the call's deadline passed
	flooded  bool // an output stream went past its cap
	died     bool // the runner is gone (killed, OOM, crashed)
	// violation says how the reply stream broke the protocol (a forged or
	// oversized marker line); the box is killed and the user's code is
	// blamed, never the platform.
	violation string
	ended     bool // the box is no longer usable
}

// startBox creates, attaches and starts a runner container and waits until
// the runner says it is ready.
func (e *Engine) startBox(ctx context.Context, image string, lim core.Limits, mnt string, env map[string]string, kind, job, owner string, preload bool) (*box, error) {
	extra := map[string]string{}
	for k, v := range env {
		extra[k] = v
	}
	if preload {
		extra["AIRLOCK_PRELOAD"] = "1"
	}
	life := e.cfg.SessionMaxLife + time.Hour
	spec := containerSpec{
		Image:   image,
		Cmd:     []string{"python3", RunnerPath},
		Env:     baseEnv(extra),
		Limits:  lim,
		Mount:   mnt,
		Labels:  e.labels(kind, job, owner, life),
		Runtime: e.cfg.Runtime,
		Stdin:   true,
	}
	id, hj, err := e.createAttached(ctx, spec)
	if err != nil {
		return nil, err
	}
	b := &box{id: id, image: image, limits: lim, created: time.Now(), hj: hj}
	b.dm.r = hj.Reader
	b.limits.OutputBytes = bootOutput
	b.sp.maxReply = smallReply
	bootCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := b.await(bootCtx, e, "ready", time.Now().Add(2*time.Minute), false)
	if err == nil && (out.ended || out.flooded || out.violation != "" || out.reply.ID != "ready") {
		err = fmt.Errorf("runner did not start (%s): %s", out.violation, out.stderr.text())
	}
	if err != nil {
		e.destroy(b.id, &b.hj)
		return nil, fmt.Errorf("sandbox: start runner in %s: %w", image, err)
	}
	return b, nil
}

// call sends one request and reads until its reply. In a session
// (interruptible) a timeout or flood interrupts the code and waits
// InterruptGrace for the runner to recover; otherwise the container is
// killed at once.
func (b *box) call(ctx context.Context, e *Engine, req runnerRequest, deadline time.Time, outputCap int, interruptible bool) (callOutcome, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dead.Load() {
		return callOutcome{}, core.ErrSessionNotFound
	}
	if outputCap > 0 {
		b.limits.OutputBytes = outputCap
	}
	if err := ctx.Err(); err != nil {
		return callOutcome{}, fmt.Errorf("sandbox: call abandoned before it started: %w", context.Cause(ctx))
	}
	b.sp.maxReply = e.replyBudget(req.Op)
	req.ID = newID()
	line, err := json.Marshal(req)
	if err != nil {
		return callOutcome{}, fmt.Errorf("sandbox: encode request: %w", err)
	}
	_ = b.hj.Conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := b.hj.Conn.Write(append(line, '\n')); err != nil {
		b.kill(e)
		return callOutcome{died: true, ended: true, stdout: &capped{}, stderr: &capped{}}, nil
	}
	return b.await(ctx, e, req.ID, deadline, interruptible)
}

// await reads frames until the reply with id arrives, the deadline passes,
// an output cap is exceeded or the runner dies.
func (b *box) await(ctx context.Context, e *Engine, id string, deadline time.Time, interruptible bool) (callOutcome, error) {
	out := callOutcome{stdout: &capped{limit: b.limits.OutputBytes}, stderr: &capped{limit: b.limits.OutputBytes}}
	_ = b.hj.Conn.SetReadDeadline(deadline)
	defer watchCtx(ctx, b.hj.Conn)()
	interrupted, cancelled := false, false
	interrupt := func() {
		if !interruptible {
			b.kill(e)
			out.ended = true
			return
		}
		if !interrupted {
			interrupted = true
			e.signal(b.id, "SIGINT")
			_ = b.hj.Conn.SetReadDeadline(time.Now().Add(e.cfg.InterruptGrace))
		}
	}
	handle := func(p []byte) (bool, error) {
		for len(p) > 0 {
			reply, rest, err := b.sp.feed(p, out.stdout)
			if err != nil {
				return false, err
			}
			p = rest
			if reply == nil {
				break
			}
			var r runnerReply
			if err := json.Unmarshal(reply, &r); err != nil {
				return false, fmt.Errorf("%w: unreadable reply line: %v", errProtocol, err)
			}
			if r.ID == id {
				out.reply = r
				b.pending = append([]byte(nil), rest...)
				if cancelled {
					return true, fmt.Errorf("sandbox: call abandoned: %w", context.Cause(ctx))
				}
				return true, nil
			}
		}
		return false, nil
	}
	if len(b.pending) > 0 {
		p := b.pending
		b.pending = nil
		done, err := handle(p)
		if errors.Is(err, errProtocol) || errors.Is(err, errReplyTooLarge) {
			b.kill(e)
			out.violation, out.ended = err.Error(), true
			return out, nil
		}
		if err != nil || done {
			return out, err
		}
	}
	for {
		stream, payload, err := b.dm.next()
		if err != nil {
			switch {
			case ctx.Err() != nil && interruptible && !interrupted:
				// The caller left: stop the code but keep the session.
				cancelled = true
				interrupt()
				continue
			case ctx.Err() != nil && !interruptible:
				b.kill(e)
				return out, fmt.Errorf("sandbox: call abandoned: %w", context.Cause(ctx))
			case errors.Is(err, os.ErrDeadlineExceeded):
				if !interruptible || interrupted {
					b.kill(e)
					out.ended = true
					if cancelled {
						return out, fmt.Errorf("sandbox: call abandoned: %w", context.Cause(ctx))
					}
					if !out.flooded {
						out.timedOut = true
					}
					return out, nil
				}
				out.timedOut = !out.flooded
				interrupt()
				continue
			case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
				b.dead.Store(true)
				out.died, out.ended = true, true
				return out, nil
			default:
				b.kill(e)
				return out, fmt.Errorf("sandbox: read from %s: %w", short(b.id), err)
			}
		}
		switch stream {
		case streamStderr:
			_, _ = out.stderr.Write(payload)
		case streamStdout:
			done, err := handle(payload)
			if errors.Is(err, errProtocol) || errors.Is(err, errReplyTooLarge) {
				b.kill(e)
				out.violation, out.ended = err.Error(), true
				return out, nil
			}
			if err != nil {
				b.kill(e)
				return out, err
			}
			if done {
				return out, nil
			}
		}
		if (out.stdout.over() || out.stderr.over()) && !out.flooded {
			out.flooded = true
			out.timedOut = false
			interrupt()
			if out.ended {
				return out, nil
			}
		}
	}
}

// errProtocol marks a reply stream that broke the runner protocol.
var errProtocol = errors.New("sandbox: runner protocol violated")

// watchCtx unblocks reads on conn when ctx ends. The returned stop waits
// for a callback already running, so it can never touch a later call.
func watchCtx(ctx context.Context, conn interface{ SetReadDeadline(time.Time) error }) func() {
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(done)
		_ = conn.SetReadDeadline(time.Now())
	})
	return func() {
		if !stop() { // the callback has started: let it finish first
			<-done
		}
	}
}

// kill marks the box dead and SIGKILLs its container; removal follows in destroy.
func (b *box) kill(e *Engine) {
	if b.dead.Swap(true) {
		return
	}
	e.signal(b.id, "SIGKILL")
}

// signal sends a signal to a container's init, which forwards it to the
// runner; bounded so a stuck daemon cannot hang a call.
func (e *Engine) signal(id, sig string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := e.docker.ContainerKill(ctx, id, sig); err != nil {
		e.log.Debug("signal container", "container", short(id), "signal", sig, "err", err)
	}
}

// oomKilled asks the daemon whether the container was OOM-killed.
func (e *Engine) oomKilled(id string) (bool, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	waitC, errC := e.docker.ContainerWait(wctx, id, container.WaitConditionNotRunning)
	select {
	case <-waitC:
	case <-errC:
	}
	wcancel()
	info, err := e.docker.ContainerInspect(ctx, id)
	if err != nil || info.ContainerJSONBase == nil || info.State == nil {
		return false, -1
	}
	return info.State.OOMKilled, info.State.ExitCode
}
