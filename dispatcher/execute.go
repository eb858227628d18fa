package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/policy"
)

// execute sends the action's request to the Executor and renders the outcome.
func (d *Dispatcher) execute(ctx context.Context, call Call, tool string, act Action) (Result, string) {
	req := callRequest(*act.Request, call, overLimits(d.cfg.Ceiling, call.Ceiling))
	if res := d.environment(ctx, call, &req); res != nil {
		return *res, "refused"
	}
	if d.exec == nil {
		return platformResult(ErrNoExecutor, tool), "failed"
	}
	red := d.redactors.forOwner(call.Owner)
	sctx, stopStream := red.Stream(ctx)
	sres, err := d.safeExec(sctx, req)
	stopStream()
	if err != nil {
		return platformResult(err, tool), "failed"
	}
	out := hideMount(red.Result(sres), req.Mount, call.MountName)
	res := Result{Sandbox: &out, Status: mapSandboxStatus(out.Status), Network: out.Network}
	if res.Status == StatusRejected {
		res.Reason = "sandbox_rejected"
	}
	if act.SandboxPolicy && out.ExitCode == policy.MarkerExitCode {
		if rule, msg, ok := policy.ParseMarker(out.Stderr); ok {
			res.Status, res.Reason = StatusRejected, "policy:"+rule
			res.Content = "refused by policy rule " + rule + " (checked inside the sandbox after resolving symlinks): " + msg
			return res, "refused"
		}
	}
	if res.Status == StatusInternal {
		res.Reason, res.Code = "unknown_sandbox_status", core.ErrInternal
		res.Err = fmt.Errorf("dispatcher: %s: sandbox returned unknown status %q", tool, out.Status)
	}
	res.Content = renderSandbox(out) + renderNetwork(out.Network)
	return res, "executed"
}

// renderNetwork lists a call's connection attempts for the tool message
// (the model and MCP hosts see them too); "" when there were none.
func renderNetwork(attempts []core.NetworkAttempt) string {
	if len(attempts) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n[network]\n")
	for i, a := range attempts {
		if i == maxAuditedAttempts {
			fmt.Fprintf(&b, "... %d more\n", len(attempts)-i)
			break
		}
		verdict := "allowed"
		if !a.Allowed {
			verdict = "refused"
		}
		if a.Reason != "" {
			verdict += " (" + a.Reason + ")"
		}
		fmt.Fprintf(&b, "%s:%d %s, %d bytes\n", a.Host, a.Port, verdict, a.Bytes)
	}
	return b.String()
}

// callRequest completes the request an action built with what the
// transport set on the call: owner, session, inputs, lane, idempotency
// key, and the call's limits capped at ceiling (they only lower what the
// arguments asked for).
func callRequest(req core.Request, call Call, ceiling core.Limits) core.Request {
	if req.Op == "" {
		req.Op = core.OpExec
	}
	if req.Owner == "" {
		req.Owner = call.Owner
	}
	if req.SessionID == "" {
		req.SessionID = call.SessionID
	}
	if req.Mount == "" {
		req.Mount = call.Mount
	}
	if req.Archive == nil {
		req.Archive = call.Archive
	}
	req.Background = req.Background || call.Background
	req.AllowStdin = req.AllowStdin || call.AllowStdin
	req.Notebook = req.Notebook || call.Notebook
	req.Lane, req.IdempotencyKey = call.Lane, call.IdempotencyKey
	if req.Egress == "" && !call.Egress.Empty() {
		req.Egress = call.Egress.String()
	}
	req.Limits = lowerLimits(req.Limits, capLimits(call.Limits, ceiling))
	return req
}

// safeExec calls the Executor, turning a panic into an error.
func (d *Dispatcher) safeExec(ctx context.Context, req core.Request) (res core.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w in executor: %v", ErrPanic, r)
		}
	}()
	return d.exec.Exec(ctx, req)
}

// platformResult maps an Executor error to a Result the model can read.
func platformResult(err error, tool string) Result {
	code := core.CodeOf(err)
	st := platformStatus(code)
	var msg string
	switch st {
	case StatusBusy:
		msg = "the sandbox is busy; try again shortly"
	case StatusUnavailable:
		msg = "the sandbox is unavailable right now; the call did not run"
	case StatusSessionNotFound:
		msg = "the session was not found (closed or expired); start a new session"
	case StatusSessionLost:
		msg = "the session was lost (its worker stopped); its variables and files are gone, start a new session"
	default:
		msg = "internal error running the tool; the call did not complete"
	}
	reason := string(st)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		reason, msg = "canceled", "the call was canceled or its deadline passed before it completed"
	}
	return failure(code, reason, "status: "+string(st)+"\n"+msg, fmt.Errorf("dispatcher: %s: %w", tool, err))
}

// mapSandboxStatus maps a sandbox status to a dispatcher Status.
func mapSandboxStatus(s core.Status) Status {
	switch s {
	case core.StatusOK, core.StatusError, core.StatusTimeout, core.StatusOOM, core.StatusOutputLimit, core.StatusRejected:
		return Status(s)
	}
	return StatusInternal
}
