package sandbox

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/core"
)

// checked is a validated request, ready to run.
type checked struct {
	core.Request
	image  string
	limits core.Limits
	mount  string
	runner bool
}

// check validates a request against the server's policy. A refusal is a
// rejected Result (returned as a non-nil *Result); platform failures are errors.
func (e *Engine) check(ctx context.Context, req core.Request) (checked, *core.Result, error) {
	reject := func(format string, a ...any) (checked, *core.Result, error) {
		return checked{}, &core.Result{Status: core.StatusRejected, ExitCode: -1, Message: fmt.Sprintf(format, a...)}, nil
	}
	c := checked{Request: req}
	if req.Language == "" {
		c.Language = core.Python
	}
	if req.Language != "" && req.Language != core.Python && req.Language != core.Shell {
		return reject("language %q is not one of python, shell", req.Language)
	}
	if len(req.Code) > e.cfg.MaxCodeBytes {
		return reject("code is %d bytes, over the %d-byte limit", len(req.Code), e.cfg.MaxCodeBytes)
	}
	if !utf8.ValidString(req.Code) {
		return reject("code is not valid UTF-8")
	}
	lim, err := resolve(req.Limits, e.cfg.Defaults, e.cfg.Max)
	if err != nil {
		return reject("limits: %v", err)
	}
	c.limits = lim
	if c.mount, err = resolveMount(req.Mount); err != nil {
		return reject("%v", err)
	}
	// Issue 10: a private input folder is readable in the sandbox or refused.
	if _, err := inputIdentity(c.mount); err != nil {
		return reject("%v", err)
	}
	if err := checkEnv(req.Env, e.cfg.EnvAllow, e.cfg.SecretEnvAllow); err != nil {
		return reject("%v", err)
	}
	if c.image, err = e.imageFor(c.Request); err != nil {
		return reject("%v", err)
	}
	if c.runner, err = e.hasRunner(ctx, c.image); err != nil {
		return checked{}, nil, err
	}
	return c, nil, nil
}

// Exec runs one request in a fresh container that is destroyed afterwards,
// whatever happens. It uses a warm container when the pool has a matching one.
func (e *Engine) Exec(ctx context.Context, req core.Request) (core.Result, error) {
	start := time.Now()
	c, rej, err := e.check(ctx, req)
	if err != nil || rej != nil {
		return deref(rej), err
	}
	var res core.Result
	if c.runner {
		res, err = e.execRunner(ctx, c)
	} else {
		res, err = e.execDirect(ctx, c)
	}
	res.DurationMS = time.Since(start).Milliseconds()
	return res, err
}

// execRunner runs a one-shot request through a resident runner: a warm one
// from the pool, or a cold one started now.
func (e *Engine) execRunner(ctx context.Context, c checked) (core.Result, error) {
	b := e.takeWarm(c)
	if b == nil {
		var err error
		b, err = e.startBox(ctx, c.image, c.limits, c.mount, c.Env, "oneshot", c.JobID, c.Owner, false)
		if err != nil {
			return core.Result{}, err
		}
	}
	defer e.destroy(b.id, &b.hj)
	return e.runOn(ctx, b, c, false)
}

// runOn executes c on box b and turns the outcome into a Result.
func (e *Engine) runOn(ctx context.Context, b *box, c checked, session bool) (core.Result, error) {
	deadline := time.Now().Add(c.limits.Timeout)
	out, err := b.call(ctx, e, runnerRequest{
		Op: "exec", Lang: string(c.Language), Code: c.Code,
		MaxArtifacts: e.cfg.MaxArtifacts, MaxArtifactBytes: e.cfg.MaxArtifactBytes,
	}, deadline, c.limits.OutputBytes, session)
	if err != nil {
		return core.Result{}, err
	}
	res := core.Result{
		Container: short(b.id),
		Stdout:    out.stdout.text(),
		Stderr:    out.stderr.text(),
		Truncated: out.stdout.over() || out.stderr.over(),
		ExitCode:  out.reply.ExitCode,
		Artifacts: out.reply.Artifacts,
		Warnings:  out.reply.Warnings,
	}
	switch {
	case out.violation != "":
		res.Status, res.ExitCode = core.StatusError, -1
		res.Message = "the code broke the runner's reply protocol (" + out.violation + "); its container was destroyed"
	case out.flooded:
		res.Status, res.ExitCode = core.StatusOutputLimit, -1
		res.Message = fmt.Sprintf("output went past the %d-byte cap per stream; the code was stopped", c.limits.OutputBytes)
	case out.timedOut:
		res.Status, res.ExitCode = core.StatusTimeout, -1
		res.Message = fmt.Sprintf("the code ran past its %s deadline and was stopped", c.limits.Timeout)
	case out.died:
		oom, code := e.oomKilled(b.id)
		res.ExitCode = code
		if oom {
			res.Status = core.StatusOOM
			res.Message = fmt.Sprintf("the code went past its %d MiB memory limit and was killed", c.limits.Memory>>20)
		} else {
			res.Status = core.StatusError
			res.Message = fmt.Sprintf("the interpreter exited (code %d)", code)
		}
	case out.reply.Error != "":
		res.Status, res.ExitCode = core.StatusError, -1
		res.Message = out.reply.Error
	case out.reply.Status == "oom":
		res.Status = core.StatusOOM
		res.Message = fmt.Sprintf("a process went past the %d MiB memory limit and was killed", c.limits.Memory>>20)
	case out.reply.Status == "ok":
		res.Status = core.StatusOK
	default:
		res.Status = core.StatusError
	}
	if session && out.ended {
		res.SessionEnded = true
		res.Message += "; the session's interpreter could not be recovered and the session was destroyed"
	}
	return res, nil
}

func deref(r *core.Result) core.Result {
	if r == nil {
		return core.Result{}
	}
	return *r
}
