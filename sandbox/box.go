package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/egress"
	"github.com/docker/docker/api/types/container"
)

// RunnerPath is the in-container controller every sandbox image carries
// (images/python/PROTOCOL.md); an image advertises it with the label
// LabelRunner, and only that exact value makes the engine use the image.
const RunnerPath = "/opt/airlock/controller.py"

// LabelRunner is the image label naming the controller (RunnerPath).
const LabelRunner = "airlock.runner"

// Frame budgets: a controller line may carry artifacts or a file chunk,
// base64 encoded; anything longer is a protocol violation, never buffered.
const smallFrame = 1 << 20

// frameBudget is the longest line a request's answer may need.
func (e *Engine) frameBudget(op string) int {
	switch op {
	case "exec":
		return e.cfg.MaxArtifactBytes/3*4 + smallFrame
	case "get":
		return e.cfg.MaxFileBytes/3*4 + smallFrame
	}
	return smallFrame
}

// box is one started container whose controller (pid 1) takes requests
// and answers with JSON frames on its link (link.go). It serves
// one owner: a one-shot call at a time (pooled) or one session.
type box struct {
	id      string
	image   string
	limits  core.Limits
	created time.Time
	life    time.Duration // the controller exits this long after it started
	owner   string        // set when the box first serves an owner; never changes
	lane    core.Lane     // the lane of the owner's calls it serves; set with owner, never changes
	out     bool          // handed out by its pool's acquire and not yet back (pool.mu)
	shares  int64         // cgroup cpu.shares it runs with (0: the daemon's default, 1024); only the call holding it touches it
	conn    *net.UnixConn // the link: request lines out, frames in
	lr      lineReader
	mu      sync.Mutex // one call at a time
	wmu     sync.Mutex // one write at a time (interrupt may come during a call)
	busy    atomic.Bool
	dead    atomic.Bool // set once the container is killed or gone
	ackMu   sync.Mutex
	acks    map[string]chan ctlFrame // side requests (interrupt) awaiting their done frame
	// door is the container's egress door (nil: no network) and egress
	// the policy its calls get (egress.go).
	door   *egress.Door
	egress egress.Policy
	// bare: booted without the image's preload (a cold one-shot or session
	// container, AIRLOCK_PRELOAD=0): its kernels import numpy & co in
	// every call. A pool hands its owner a preloaded one when it can.
	bare bool
	// features the controller announced in its ready frame (set before first use).
	features map[string]bool
}

// has reports whether the box's controller announced a feature.
func (b *box) has(feature string) bool { return b.features[feature] }

// callOpts are one call's Go-side bounds.
type callOpts struct {
	deadline time.Time // outer deadline: past it the container is killed
	// timeout, if set, makes the deadline this long after the call has the
	// box (a call queued behind another does not spend its bound waiting).
	timeout time.Duration
	// run, if set, makes the deadline this long after the controller says
	// the code started (the "started" frame): the set-up before it (a
	// kernel's fork, the end of a streamed input's unpack) is not the
	// code's time.
	run time.Duration
	// stretch is how far, in all, the controller's "stretch" frames may
	// move the run deadline (the time the code waited for a CPU; bounded
	// here too, so no frame from inside the sandbox holds Airlock longer:
	// core.TimeoutStretch).
	stretch time.Duration
	session bool // a disconnect escalates interrupt -> restart, never kill first
	output  int  // Limits.OutputBytes: kept bytes per stream (head + tail)
	budget  int  // longest frame line accepted
	sink    *forwarder
	grace   time.Duration
	// quiet marks the service's own work on a session (a snapshot, an
	// editor's question): the session does not show busy meanwhile and
	// an interrupt finds no call to stop.
	quiet bool
}

// callOutcome is what one controller call produced.
type callOutcome struct {
	done    ctlFrame
	gotDone bool
	started bool // the controller said the code reached its kernel
	// stretched is how far the controller's "stretch" frames moved the
	// run deadline (its code waited for a CPU).
	stretched time.Duration
	stdout    *headTail
	stderr    *headTail
	display   []core.Display
	timedOut  bool   // the controller did not answer by the outer deadline
	died      bool   // the container is gone (its link closed)
	broken    string // the frame stream was unreadable; the box was killed
	abandoned bool   // the caller's ctx ended during the call
}

// startBox creates and starts a controller container, takes its link's
// one connection and waits until it says it is ready. preload leaves the zygote's preload to the
// image (AIRLOCK_PRELOAD in its env: the python image preloads numpy & co);
// without it the container starts with none. shares is its cgroup
// cpu.shares (0: the daemon's default).
//
// A non-empty pol gives the container a door to the egress proxy
// (egress.go); its calls get pol.
func (e *Engine) startBox(ctx context.Context, image string, lim core.Limits, kind, job, owner string, preload bool, life time.Duration, shares int64, pol egress.Policy) (*box, error) {
	start := time.Now()
	extra := map[string]string{
		"AIRLOCK_MAX_LIFE_S": strconv.FormatInt(int64(life/time.Second)+1, 10),
		// /workspace is the container's own tmpfs (spec.go): the controller
		// unpacks a call's input into it and empties it after every one-shot call.
		"AIRLOCK_WORKSPACE": "tmpfs",
		// Done frames carry the call's phases (phases.go): a few clock reads.
		"AIRLOCK_TRACE": "1",
		// The controller connects here first thing (link.go).
		"AIRLOCK_LINK": LinkPath,
	}
	if !preload {
		extra["AIRLOCK_PRELOAD"] = "0"
	}
	if e.cfg.SchedSlice > 0 {
		extra["AIRLOCK_SCHED_SLICE_US"] = strconv.FormatInt(e.cfg.SchedSlice.Microseconds(), 10)
	}
	var door *egress.Door
	if !pol.Empty() {
		var err error
		if door, err = e.openDoor(); err != nil {
			return nil, err
		}
		e.egressEnv(extra)
	}
	spec := containerSpec{
		Image:        image,
		Env:          baseEnv(extra),
		Limits:       lim,
		Labels:       e.labels(kind, job, owner, life+time.Minute),
		Runtime:      e.cfg.Runtime,
		CgroupParent: e.cfg.CgroupParent,
		CPUShares:    shares,
	}
	lk, err := e.openLink()
	if err != nil {
		if door != nil {
			_ = door.Close()
		}
		return nil, err
	}
	spec.Link = lk.path()
	spec.Labels[LabelLink] = lk.id
	// A create abandoned midway may still make the container, unseen: let
	// creation finish (bounded) whatever ctx does; only the wait is cancelable.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	if door != nil {
		spec.Door = door.Path()
	}
	id, uid, err := e.createStarted(cctx, spec)
	cancel()
	if err != nil {
		lk.close()
		if door != nil {
			_ = door.Close()
		}
		return nil, err
	}
	if door != nil {
		e.trackDoor(id, door)
	}
	blog := e.followBootLog(ctx, id)
	defer blog.stop()
	conn, err := e.acceptLink(ctx, lk, id, uid, time.Now().Add(linkBoot))
	if err != nil {
		e.signal(id, "SIGKILL")
		if ctx.Err() == nil {
			err = fmt.Errorf("%w%s", err, blog.withLog(""))
		}
		e.destroy(id, nil, nil)
		return nil, fmt.Errorf("sandbox: start controller in %s: %w", image, err)
	}
	b := &box{id: id, image: image, limits: lim, created: start, life: life, owner: owner, conn: conn, shares: shares, door: door, egress: pol, bare: !preload}
	b.lr.r = conn
	if err := b.awaitReady(ctx, time.Now().Add(linkBoot)); err != nil {
		b.kill(e)
		if ctx.Err() == nil {
			err = fmt.Errorf("%w%s", err, blog.withLog(""))
		}
		e.destroy(b.id, b.conn, nil)
		return nil, fmt.Errorf("sandbox: start controller in %s: %w", image, err)
	}
	if door != nil && !b.has(featureEgress) {
		b.kill(e)
		e.destroy(b.id, b.conn, nil)
		return nil, core.Errorf("sandbox.egress", core.ErrUnavailable, "the sandbox image "+image+" is older than network policies (its controller relays no egress door): rebuild it (make images)")
	}
	e.metrics.boot(kind, time.Since(start), cgroupCPU(id))
	return b, nil
}

// awaitReady reads until the controller's ready frame.
func (b *box) awaitReady(ctx context.Context, deadline time.Time) error {
	_ = b.conn.SetReadDeadline(deadline)
	defer watchCtx(ctx, b.conn)()
	for {
		line, err := b.lr.next(smallFrame)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%w: %w", core.ErrUnavailable, context.Cause(ctx))
			}
			return fmt.Errorf("%w: controller did not become ready (%v)", core.ErrUnavailable, err)
		}
		var f ctlFrame
		if json.Unmarshal(line, &f) == nil && f.T == "ready" {
			b.features = map[string]bool{}
			for _, x := range f.Features {
				b.features[x] = true
			}
			return nil
		}
	}
}

// send writes one request line to the controller.
func (b *box) send(req ctlRequest) error {
	line, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("sandbox: encode request: %w", err)
	}
	b.wmu.Lock()
	defer b.wmu.Unlock()
	_ = b.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := b.conn.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("sandbox: write to %s: %w", short(b.id), err)
	}
	return nil
}

// interrupt raises KeyboardInterrupt in the running call, if any. It does
// not wait for the call and never takes the call lock.
func (b *box) interrupt() error { return b.send(ctlRequest{ID: newID(), Op: "interrupt"}) }

// interruptAck sends an interrupt and waits (up to wait) for the
// controller's answer, which the running call's reader hands over. It
// reports whether the controller had an exec running to interrupt.
func (b *box) interruptAck(wait time.Duration) (bool, error) {
	f, err := b.sideAck(ctlRequest{Op: "interrupt"}, wait)
	return f.Interrupted, err
}

// sideAck sends a side request (one the controller answers at once, even
// while an exec runs) and waits up to wait for its done frame, which the
// running call's reader hands over. No answer in time is a zero frame.
func (b *box) sideAck(req ctlRequest, wait time.Duration) (ctlFrame, error) {
	req.ID = newID()
	ch := make(chan ctlFrame, 1)
	b.ackMu.Lock()
	if b.acks == nil {
		b.acks = map[string]chan ctlFrame{}
	}
	b.acks[req.ID] = ch
	b.ackMu.Unlock()
	defer func() {
		b.ackMu.Lock()
		delete(b.acks, req.ID)
		b.ackMu.Unlock()
	}()
	if err := b.send(req); err != nil {
		return ctlFrame{}, err
	}
	select {
	case f := <-ch:
		return f, nil
	case <-time.After(wait):
		return ctlFrame{}, nil
	}
}

// deliverAck hands a side request's done frame to its waiter, if any.
func (b *box) deliverAck(f ctlFrame) {
	b.ackMu.Lock()
	ch := b.acks[f.ID]
	b.ackMu.Unlock()
	if ch != nil && f.T == "done" {
		select {
		case ch <- f:
		default:
		}
	}
}

// call sends one request and reads frames until its done frame. Frames of
// other ids (an earlier abandoned call, an interrupt's answer) are skipped.
func (b *box) call(ctx context.Context, e *Engine, req ctlRequest, o callOpts) (callOutcome, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dead.Load() {
		return callOutcome{}, core.ErrSessionNotFound
	}
	if err := ctx.Err(); err != nil {
		return callOutcome{}, fmt.Errorf("sandbox: call abandoned before it started: %w", context.Cause(ctx))
	}
	defer b.busy.Store(false)
	if o.output <= 0 {
		o.output = smallFrame
	}
	if o.budget <= 0 {
		o.budget = e.frameBudget(req.Op)
	}
	if o.grace <= 0 {
		o.grace = e.cfg.InterruptGrace
	}
	if o.timeout > 0 {
		o.deadline = time.Now().Add(o.timeout)
	}
	req.ID = newID()
	if err := b.send(req); err != nil {
		b.kill(e)
		return callOutcome{died: true, stdout: newHeadTail(o.output), stderr: newHeadTail(o.output)}, nil
	}
	// Busy only once the request is written: an interrupt sent because of
	// it then always reaches the controller after the request it targets.
	if !o.quiet {
		b.busy.Store(true)
	}
	return b.await(ctx, e, req.ID, o)
}

// await reads the answer to request id. A caller that goes away interrupts
// the call (then, in a session, restarts the kernel) and waits a grace
// each time; only an unanswering controller gets its container killed.
func (b *box) await(ctx context.Context, e *Engine, id string, o callOpts) (callOutcome, error) {
	out := callOutcome{stdout: newHeadTail(o.output), stderr: newHeadTail(o.output)}
	conn := b.conn
	_ = conn.SetReadDeadline(o.deadline)
	defer watchCtx(ctx, conn)()
	stage := 0           // after a disconnect: 1 interrupt sent, 2 restart sent
	var runEnd time.Time // the run deadline, once the code started
	runUntil := func(end time.Time) {
		runEnd = end
		_ = conn.SetReadDeadline(end)
		if ctx.Err() != nil { // the caller left meanwhile: watchCtx's deadline stands
			_ = conn.SetReadDeadline(time.Now())
		}
	}
	for {
		line, err := b.lr.next(o.budget)
		if err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil && stage == 0:
				out.abandoned, stage = true, 1
				if b.interrupt() != nil {
					b.kill(e)
					return out, nil
				}
				_ = conn.SetReadDeadline(time.Now().Add(o.grace))
			case errors.Is(err, os.ErrDeadlineExceeded) && stage == 1 && o.session:
				stage = 2
				if b.send(ctlRequest{ID: newID(), Op: "restart"}) != nil {
					b.kill(e)
					return out, nil
				}
				_ = conn.SetReadDeadline(time.Now().Add(o.grace))
			case errors.Is(err, os.ErrDeadlineExceeded):
				b.kill(e)
				out.timedOut = !out.abandoned
				return out, nil
			case errors.Is(err, errLineTooLong):
				b.kill(e)
				out.broken = err.Error()
				return out, nil
			case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
				b.dead.Store(true)
				out.died = true
				return out, nil
			default:
				b.kill(e)
				return out, fmt.Errorf("sandbox: read from %s: %w", short(b.id), err)
			}
			continue
		}
		var f ctlFrame
		if err := json.Unmarshal(line, &f); err != nil {
			b.kill(e)
			out.broken = "unreadable frame: " + err.Error()
			return out, nil
		}
		if f.ID != id {
			b.deliverAck(f)
			continue
		}
		switch f.T {
		case "out":
			if f.S == "stderr" {
				out.stderr.write(f.D)
				o.sink.emit(core.Event{Kind: core.EventStderr, Text: f.D})
			} else {
				out.stdout.write(f.D)
				o.sink.emit(core.Event{Kind: core.EventStdout, Text: f.D})
			}
		case "input_request":
			o.sink.emit(core.Event{Kind: core.EventInput, Text: f.Prompt, Password: f.Password})
		case "display":
			if m, err := f.displayData(); err == nil {
				out.display = append(out.display, core.Display{Data: m, Result: f.Result})
				o.sink.emit(core.Event{Kind: core.EventDisplay, Data: m, Result: f.Result})
			}
		case "clear_output":
			o.sink.emit(core.Event{Kind: core.EventClear, Wait: f.Wait})
		case "started":
			out.started = true
			if o.run > 0 && stage == 0 {
				runUntil(time.Now().Add(o.run))
			}
		case "stretch":
			// The controller moved the code's deadline by the time it waited
			// for a CPU; the answer's deadline moves as far, within o.stretch.
			if d := min(time.Duration(f.MS)*time.Millisecond, o.stretch-out.stretched); d > 0 && !runEnd.IsZero() && stage == 0 {
				out.stretched += d
				runUntil(runEnd.Add(d))
			}
		case "done":
			out.done, out.gotDone = f, true
			return out, nil
		}
	}
}

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

// signal sends a signal to a container's main process; bounded so a stuck
// daemon cannot hang a call.
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
