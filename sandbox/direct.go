package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// execDirect runs code as the container's own command, for images without
// a runner: `bash -c CODE` or `python3 -c CODE`. Output is read as it comes
// and capped; the container is killed at the deadline or on a flood.
func (e *Engine) execDirect(ctx context.Context, c checked) (core.Result, error) {
	cmd := []string{"/bin/bash", "-c", c.Code}
	if c.Language == core.Python {
		cmd = []string{"python3", "-c", c.Code}
	}
	spec := containerSpec{
		Image:   c.image,
		Cmd:     cmd,
		Env:     baseEnv(c.Env),
		Limits:  c.limits,
		Mount:   c.mount,
		Labels:  e.labels("oneshot", c.JobID, c.Owner, c.limits.Timeout+time.Hour),
		Runtime: e.cfg.Runtime,
		// Batch-lane calls yield the cores to interactive ones.
		CPUShares: e.sharesFor(c.Lane),
	}
	id, hj, err := e.createAttached(ctx, spec)
	if err != nil {
		return core.Result{}, err
	}
	defer e.destroy(id, &hj)
	stdout := &capped{limit: c.limits.OutputBytes}
	stderr := &capped{limit: c.limits.OutputBytes}
	dm := demux{r: hj.Reader}
	_ = hj.Conn.SetReadDeadline(time.Now().Add(c.limits.Timeout))
	defer watchCtx(ctx, hj.Conn)()
	kill := func() { e.signal(id, "SIGKILL") }
	res := core.Result{Container: short(id)}
	for {
		stream, payload, err := dm.next()
		if err != nil {
			switch {
			case ctx.Err() != nil:
				kill()
				return core.Result{}, fmt.Errorf("sandbox: run abandoned: %w", context.Cause(ctx))
			case errors.Is(err, os.ErrDeadlineExceeded):
				kill()
				res.Status, res.ExitCode = core.StatusTimeout, -1
				res.Message = fmt.Sprintf("the code ran past its %s deadline and was killed", c.limits.Timeout)
			case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			default:
				kill()
				return core.Result{}, fmt.Errorf("sandbox: read from %s: %w", short(id), err)
			}
			break
		}
		if stream == streamStderr {
			_, _ = stderr.Write(payload)
		} else if stream == streamStdout {
			_, _ = stdout.Write(payload)
		}
		if stdout.over() || stderr.over() {
			kill()
			res.Status, res.ExitCode = core.StatusOutputLimit, -1
			res.Message = fmt.Sprintf("output went past the %d-byte cap per stream; the code was killed", c.limits.OutputBytes)
			break
		}
	}
	res.Stdout, res.Stderr = stdout.text(), stderr.text()
	res.Truncated = stdout.over() || stderr.over()
	if res.Status != "" {
		return res, nil
	}
	oom, code := e.oomKilled(id)
	res.ExitCode = code
	switch {
	case oom:
		res.Status = core.StatusOOM
		res.Message = fmt.Sprintf("the code went past its %d MiB memory limit and was killed", c.limits.Memory>>20)
	case code == 0:
		res.Status = core.StatusOK
	default:
		res.Status = core.StatusError
	}
	return res, nil
}
