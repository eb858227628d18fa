package sandbox

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/egress"
)

// checked is a validated request, ready to run.
type checked struct {
	core.Request
	image  string
	limits core.Limits
	egress egress.Policy // the call's network policy (zero: none)
	mount  string        // the resolved input folder, or ""
	input  *inputScan    // the input folder, scanned; copied in as Archive when the call runs
	// entries is how many entries Archive holds (listed or scanned).
	entries int
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
	if c.mount != "" {
		if c.input, err = scanInput(c.mount, e.cfg.InputMaxEntries, e.cfg.InputMaxBytes); err != nil {
			return reject("%v", err)
		}
		if c.input.pages > lim.TmpfsBytes {
			return reject("the input folder holds %d bytes of files (%d in whole pages), more than the %d-byte /workspace it is copied into (tmpfs_bytes; at most %d on this server)",
				c.input.bytes, c.input.pages, lim.TmpfsBytes, e.cfg.Max.TmpfsBytes)
		}
		if need := inputMemory(c.input); need > lim.Memory {
			return reject("the input folder holds %d bytes of files in %d entries; copying it into the sandbox takes about %d bytes of memory, more than memory_bytes %d (at most %d on this server)",
				c.input.bytes, len(c.input.entries), need, lim.Memory, e.cfg.Max.Memory)
		}
		c.entries = len(c.input.entries)
	}
	if c.egress, err = e.egressPolicy(req); err != nil {
		return checked{}, nil, err
	}
	if err := checkEnv(req.Env); err != nil {
		return checked{}, nil, core.E("sandbox.check", core.ErrInvalid, err)
	}
	if !utf8.ValidString(req.Stdin) || len(req.Stdin) > e.cfg.MaxCodeBytes*10 {
		return reject("stdin must be valid UTF-8 of at most %d bytes", e.cfg.MaxCodeBytes*10)
	}
	if c.image, err = e.imageFor(c.Request); err != nil {
		return reject("%v", err)
	}
	if err := e.requireController(ctx, c.image, c.Environment); err != nil {
		return checked{}, nil, err
	}
	return c, nil, nil
}

// Exec runs one one-shot request. With pools on, it runs in one of the
// owner's warm containers (fresh Python state, empty work dir, no leftover
// process: see docs/isolation.md), else a generic warm one, else a new one;
// otherwise in a fresh container destroyed afterwards.
func (e *Engine) Exec(ctx context.Context, req core.Request) (core.Result, error) {
	if err := archiveRequest(req); err != nil {
		return core.Result{}, err
	}
	c, rej, err := e.check(ctx, req)
	if err != nil || rej != nil {
		return deref(rej), err
	}
	if len(c.Archive) > 0 {
		if err := e.checkArchive(&c); err != nil {
			return core.Result{}, err
		}
	}
	return e.execRunner(ctx, c)
}

// packInput packs c's input folder (if any) into c.Archive, for a
// controller older than streamed inputs to unpack into /workspace (one
// request line: at most core.MaxArchiveBytes). A folder that changed or
// became unreadable since it was scanned is refused like a bad one.
func (c *checked) packInput(image string) (*core.Result, error) {
	if c.input == nil {
		return nil, nil
	}
	if c.input.packed > core.MaxArchiveBytes || inputMemoryLine(c.input.packed) > c.limits.Memory {
		return nil, core.Errorf("sandbox.exec", core.ErrUnavailable, fmt.Sprintf("the sandbox image %s is older than streamed input folders and cannot take this one (%d bytes packed): rebuild it (make images)", image, c.input.packed))
	}
	data, err := c.input.pack()
	var refused *core.Error
	if errors.As(err, &refused) {
		return &core.Result{Status: core.StatusRejected, ExitCode: -1, Message: refused.Message()}, nil
	}
	if err != nil {
		return nil, err
	}
	c.Archive, c.entries = data, len(c.input.entries)
	return nil, nil
}

// archiveRequest refuses what no archive call may ask for: an archive over
// core.MaxArchiveBytes (ErrTooLarge), together with a Mount, or in a session.
func archiveRequest(req core.Request) error {
	if len(req.Archive) == 0 {
		return nil
	}
	if len(req.Archive) > core.MaxArchiveBytes {
		return core.Errorf("sandbox.exec", core.ErrTooLarge, fmt.Sprintf("the archive is %d bytes, over the %d-byte limit", len(req.Archive), core.MaxArchiveBytes))
	}
	if req.Mount != "" {
		return core.Errorf("sandbox.exec", core.ErrInvalid, "a call takes either an input folder (mount) or an archive, not both")
	}
	if req.SessionID != "" {
		return errArchiveInSession
	}
	return nil
}

// errArchiveInSession refuses an archive outside a one-shot call.
var errArchiveInSession = core.Errorf("sandbox", core.ErrInvalid, "an archive can only come with a one-shot call; put files into a session with file.put")

// checkArchive lists c's archive on the host (every entry, the bounds, the
// /workspace size) before any container is touched.
func (e *Engine) checkArchive(c *checked) error {
	sum, err := listArchive(c.Archive, archiveBounds{entries: ArchiveMaxEntries, bytes: ArchiveMaxBytes,
		ratio: ArchiveMaxRatio, fileSize: c.limits.FileSize})
	if err != nil {
		return err
	}
	if sum.Pages > c.limits.TmpfsBytes {
		return core.Errorf("sandbox.exec", core.ErrInvalid, fmt.Sprintf("the archive unpacks to %d bytes (%d in whole pages), more than the %d-byte /workspace (tmpfs_bytes)", sum.Bytes, sum.Pages, c.limits.TmpfsBytes))
	}
	c.entries = sum.Entries
	return nil
}

// unpackBounds are the bounds the controller applies while it unpacks c's
// Archive: a request's archive gets the archive bounds, an input folder
// the server's input ones (it was packed here, within them).
func (e *Engine) unpackBounds(c checked) archiveBounds {
	if c.input != nil {
		return archiveBounds{entries: e.cfg.InputMaxEntries, bytes: e.cfg.InputMaxBytes, ratio: ArchiveMaxRatio}
	}
	return archiveBounds{entries: ArchiveMaxEntries, bytes: ArchiveMaxBytes, ratio: ArchiveMaxRatio}
}

// unpackTime is what writing and unpacking an archive of n bytes may add
// to a call, which the code's deadline must not pay: 10 s, plus a second
// per 4 MiB and per 500 entries (a busy machine's controller writes well
// above that: 2,000 files took 1.5 s under a load of 30 on two cores).
func unpackTime(n, entries int) time.Duration {
	return 10*time.Second + time.Duration(n>>22+entries/500)*time.Second
}

// execRunner runs a one-shot request through a controller: a warm
// container from the pool (the owner's own of the call's lane, else a
// generic one), or a new one. Batch-lane calls run at Config.BatchCPUShares.
func (e *Engine) execRunner(ctx context.Context, c checked) (core.Result, error) {
	// A call with a network policy runs in a container with a door
	// (egress.go), from the pool of its image and policy (poolOf): its
	// owner's next call with the same policy finds it warm.
	p := e.poolOf(c)
	lane := c.Lane
	if lane != core.LaneBatch {
		lane = core.LaneInteractive
	}
	shares := e.sharesFor(lane)
	var b *box
	source := "cold"
	if p != nil {
		b, source = p.acquire(c.Owner, lane, core.MostWall(c.limits.Timeout))
	}
	e.metrics.call(source)
	if b == nil {
		life := core.MostWall(c.limits.Timeout) + 2*time.Minute
		if p != nil && !e.cfg.SingleUse {
			life = e.poolLife() // it will serve its owner again
		}
		var err error
		b, err = e.startBox(ctx, c.image, c.limits, "oneshot", c.JobID, c.Owner, false, life, shares, c.egress)
		if err != nil {
			return core.Result{}, err
		}
		b.lane = lane
	}
	// A generic container taken for the batch lane still has the default weight.
	e.setShares(ctx, b, shares)
	res, err := e.runOn(ctx, b, c, false, c.Env)
	if c.input != nil {
		res.Warnings = append(res.Warnings, c.input.warnings()...)
	}
	// A refused archive left the container clean (the controller emptied
	// /workspace and never started the code): it may serve the owner again.
	switch {
	case p != nil && (err == nil || isRefusal(err)):
		p.release(b, c.Owner, lane)
	case p != nil:
		p.discard(b)
	default:
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
	// answer comes well after that. Both count from the code's start (the
	// controller's "started" frame); before it the controller has
	// StartGrace more for its set-up.
	run := c.limits.Timeout + e.cfg.InterruptGrace + 2*time.Second
	deadline := time.Now().Add(e.cfg.StartGrace + run)
	req := ctlRequest{
		Op: "exec", Mode: mode, Lang: string(c.Language), Code: c.Code, Env: env, Stdin: c.Stdin,
		TimeoutMS: c.limits.Timeout.Milliseconds(), HardOutputBytes: e.cfg.HardOutputBytes,
		MaxArtifacts: e.cfg.MaxArtifacts, MaxArtifactBytes: e.cfg.MaxArtifactBytes,
		Background: session && c.Background, Generated: c.Generated,
		AllowStdin: session && c.AllowStdin && c.Stdin == "", Notebook: c.Notebook,
	}
	if c.input != nil || len(c.Archive) > 0 {
		if !b.has(featureArchive) {
			fw.close()
			return core.Result{}, core.Errorf("sandbox.exec", core.ErrUnavailable, fmt.Sprintf("the sandbox image %s is older than archive inputs: rebuild it (make images)", b.image))
		}
	}
	if c.input != nil {
		var rej *core.Result
		var err error
		if b.has(featureArchiveStream) {
			// The controller unpacks while the chunks arrive; the exec then
			// waits only for the last few (airlock_stream.py QUEUED_CHUNKS).
			rej, err = e.streamInput(ctx, b, c, &req)
			deadline = time.Now().Add(e.cfg.StartGrace + run + unpackTime(4*inputChunk, c.entries))
		} else {
			rej, err = c.packInput(b.image)
		}
		if err != nil || rej != nil {
			fw.close()
			return deref(rej), err
		}
	}
	if len(c.Archive) > 0 {
		bounds := e.unpackBounds(c)
		req.Archive, req.ArchiveMaxEntries, req.ArchiveMaxBytes, req.ArchiveMaxRatio = c.Archive, bounds.entries, bounds.bytes, bounds.ratio
		deadline = deadline.Add(unpackTime(len(c.Archive), c.entries))
	}
	endNet, err := e.netCall(b, c.Owner, c.JobID)
	if err != nil {
		fw.close()
		return core.Result{}, err
	}
	began := time.Now()
	out, err := b.call(ctx, e, req, callOpts{deadline: deadline, run: run, stretch: core.TimeoutStretch * c.limits.Timeout, session: session, output: c.limits.OutputBytes, sink: fw})
	if out.gotDone {
		e.metrics.callPhases(mode, out.done.Trace, time.Since(began))
	}
	e.metrics.stretched(mode, out.stretched)
	network := endNet()
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
		Network:   network,
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
	case out.timedOut && !out.started && b.has(featureStarted):
		// Nothing of the code ran: the caller may send it again.
		fw.close()
		return core.Result{}, core.Errorf("sandbox.exec", core.ErrUnavailable, fmt.Sprintf("the sandbox did not start the code within %s; its container was destroyed", e.cfg.StartGrace))
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
	case out.done.Fail != "" && out.done.Code != "":
		// The controller refused the call before running anything (a bad archive entry).
		fw.close()
		return core.Result{}, core.Errorf("sandbox.exec", knownCode(out.done.Code), out.done.Fail)
	case out.done.Fail != "":
		res.Status, res.ExitCode = core.StatusRejected, -1
		res.Message = out.done.Fail
	default:
		e.fromDone(&res, out.done, c)
		if a := out.done.Archive; a != nil {
			e.metrics.unpacked(a.UnpackMS / 1000)
		}
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
	if d.CPUSeconds > 0 {
		res.CPUSeconds = d.CPUSeconds
	}
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

// knownCode is c when it is one of core's codes, else core.ErrInternal: a
// controller cannot make up codes.
func knownCode(c string) core.Code {
	for _, k := range core.Codes() {
		if string(k) == c {
			return k
		}
	}
	return core.ErrInternal
}

func deref(r *core.Result) core.Result {
	if r == nil {
		return core.Result{}
	}
	return *r
}
