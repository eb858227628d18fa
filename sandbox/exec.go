package sandbox

import (
	"context"
	"fmt"
	"math"
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
		return checked{}, nil, core.E("sandbox.check", core.ErrInvalid, err)
	}
	if !utf8.ValidString(req.Stdin) || len(req.Stdin) > e.cfg.MaxCodeBytes*10 {
		return reject("stdin must be valid UTF-8 of at most %d bytes", e.cfg.MaxCodeBytes*10)
	}
	if c.image, err = e.imageFor(c.Request); err != nil {
		return reject("%v", err)
	}
	if c.runner, err = e.hasRunner(ctx, c.image); err != nil {
		return checked{}, nil, err
	}
	return c, nil, nil
}

// Exec runs one one-shot request. With pools on, it runs in one of the
// owner's warm containers (fresh Python state, empty work dir, no leftover
// process: see docs/isolation.md), else a generic warm one, else a new one;
// otherwise in a fresh container destroyed afterwards.
func (e *Engine) Exec(ctx context.Context, req core.Request) (core.Result, error) {
	start := time.Now()
	c, rej, err := e.check(ctx, req)
	if err != nil || rej != nil {
		return deref(rej), err
	}
	if c.runner {
		return e.execRunner(ctx, c)
	}
	res, err := e.execDirect(ctx, c)
	res.DurationMS = time.Since(start).Milliseconds()
	return res, err
}

// execRunner runs a one-shot request through a controller: a warm
// container from the pool, or a new one.
func (e *Engine) execRunner(ctx context.Context, c checked) (core.Result, error) {
	p := e.poolOf(c)
	var b *box
	source := "cold"
	if p != nil {
		b, source = p.acquire(c.Owner, c.limits.Timeout)
	}
	e.metrics.call(source)
	if b == nil {
		life := c.limits.Timeout + 2*time.Minute
		if p != nil && !e.cfg.SingleUse {
			life = e.poolLife() // it will serve its owner again
		}
		var err error
		b, err = e.startBox(ctx, c.image, c.limits, c.mount, "oneshot", c.JobID, c.Owner, false, life)
		if err != nil {
			return core.Result{}, err
		}
	}
	res, err := e.runOn(ctx, b, c, false, c.Env)
	if p != nil && err == nil {
		p.release(b, c.Owner)
	} else {
		e.retire(b)
	}
	return res, err
}

// runOn executes c on box b and turns the controller's done frame into a
// Result. Everything but the call's own output comes from the controller,
// never from the code.
func (e *Engine) runOn(ctx context.Context, b *box, c checked, session bool, env map[string]string) (core.Result, error) {
	fw := newForwarder(core.SinkFrom(ctx))
	mode := "oneshot"
	if session {
		mode = "session"
	}
	// The controller stops the code at its timeout (SIGINT, then SIGKILL
	// 500 ms later) and answers; Airlock kills the container only when no
	// answer comes well after that.
	deadline := time.Now().Add(c.limits.Timeout + e.cfg.InterruptGrace + 2*time.Second)
	out, err := b.call(ctx, e, ctlRequest{
		Op: "exec", Mode: mode, Lang: string(c.Language), Code: c.Code, Env: env, Stdin: c.Stdin,
		TimeoutMS: c.limits.Timeout.Milliseconds(), HardOutputBytes: e.cfg.HardOutputBytes,
		MaxArtifacts: e.cfg.MaxArtifacts, MaxArtifactBytes: e.cfg.MaxArtifactBytes,
		Background: session && c.Background,
	}, callOpts{deadline: deadline, session: session, output: c.limits.OutputBytes, sink: fw})
	if err != nil {
		fw.close()
		return core.Result{}, err
	}
	res := core.Result{
		Container: short(b.id),
		Stdout:    out.stdout.text(),
		Stderr:    out.stderr.text(),
		Display:   out.display,
		Dropped:   core.Dropped{Stdout: out.stdout.dropped(), Stderr: out.stderr.dropped()},
	}
	res.Truncated = res.Dropped.Stdout > 0 || res.Dropped.Stderr > 0
	if out.abandoned {
		fw.close()
		return core.Result{}, fmt.Errorf("sandbox: call abandoned: %w", context.Cause(ctx))
	}
	switch {
	case out.broken != "":
		res.Status, res.ExitCode = core.StatusError, -1
		res.Message = "the sandbox controller's answer was unreadable (" + out.broken + "); its container was destroyed"
	case out.timedOut:
		res.Status, res.ExitCode = core.StatusTimeout, -1
		res.Message = fmt.Sprintf("the code ran past its %s deadline and the sandbox did not answer; its container was destroyed", c.limits.Timeout)
	case out.died:
		oom, code := e.oomKilled(b.id)
		res.ExitCode = code
		res.Status = core.StatusError
		res.Message = "the sandbox container exited during the call"
		if oom {
			res.Status = core.StatusOOM
			res.Message = fmt.Sprintf("the code went past its %d MiB memory limit and the container was killed", c.limits.Memory>>20)
		}
	case out.done.Fail != "":
		res.Status, res.ExitCode = core.StatusRejected, -1
		res.Message = out.done.Fail
	default:
		e.fromDone(&res, out.done, c)
		for i := range res.Artifacts {
			a := res.Artifacts[i]
			a.Data = nil
			fw.emit(core.Event{Kind: core.EventArtifact, Artifact: &a})
		}
	}
	if session && b.dead.Load() {
		res.SessionEnded = true
		res.Message += "; the session's container could not be recovered and the session was destroyed"
	}
	if n := fw.close(); n > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the live stream fell behind and dropped %d events; the result is complete", n))
	}
	return res, nil
}

// fromDone fills a Result from the controller's done frame.
func (e *Engine) fromDone(res *core.Result, d ctlFrame, c checked) {
	res.ExitCode = d.ExitCode
	res.Error = d.Error
	res.ExecutionCount = d.ExecutionCount
	res.DurationMS = int64(math.Round(d.DurationMS))
	res.KernelRestarted = d.KernelRestarted
	res.Message = d.Message
	res.Warnings = append(res.Warnings, d.Warnings...)
	arts, warn := checkArtifacts(d.Artifacts, e.cfg.MaxArtifacts, e.cfg.MaxArtifactBytes)
	res.Artifacts = arts
	res.Warnings = append(res.Warnings, warn...)
	switch core.Status(d.Status) {
	case core.StatusOK:
		res.Status = core.StatusOK
	case core.StatusTimeout:
		res.Status = core.StatusTimeout
		if res.Message == "" {
			res.Message = fmt.Sprintf("the code ran past its %s deadline and was stopped", c.limits.Timeout)
		}
	case core.StatusOOM:
		res.Status = core.StatusOOM
		if res.Message == "" {
			res.Message = fmt.Sprintf("a process went past the %d MiB memory limit and was killed", c.limits.Memory>>20)
		}
	case core.StatusOutputLimit:
		res.Status = core.StatusOutputLimit
		if res.Message == "" {
			res.Message = fmt.Sprintf("output went past the hard cap of %d bytes per stream; the code was stopped", e.cfg.HardOutputBytes)
		}
	case "interrupted":
		// Like an uncaught KeyboardInterrupt: an error result (exit 130).
		res.Status = core.StatusError
		if res.Message == "" {
			res.Message = "the call was interrupted"
		}
		if res.Error == nil {
			res.Error = &core.ExecError{Name: "KeyboardInterrupt", Value: res.Message}
		}
	default:
		res.Status = core.StatusError
	}
}

func deref(r *core.Result) core.Result {
	if r == nil {
		return core.Result{}
	}
	return *r
}
