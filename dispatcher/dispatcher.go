package dispatcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/approvals"
	"github.com/airlock-dev/airlock/internal/policy"
)

// Dispatcher is the one gate every tool call goes through. It is safe for
// concurrent use.
type Dispatcher struct {
	cfg       Config
	reg       *Registry
	exec      Executor
	log       *slog.Logger
	policy    *gate
	redactor  *Redactor
	approvals heldCalls
}

// New returns a Dispatcher with the built-in tools. exec runs sandbox
// requests (nil is allowed for listings; calls then answer unavailable);
// logger receives the audit records (nil discards them).
func New(cfg Config, exec Executor, logger *slog.Logger) *Dispatcher {
	cfg = cfg.withDefaults()
	return NewWithRegistry(cfg, BuiltinRegistry(cfg), exec, logger)
}

// NewWithRegistry returns a Dispatcher over an explicit registry.
func NewWithRegistry(cfg Config, reg *Registry, exec Executor, logger *slog.Logger) *Dispatcher {
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	store := cfg.Approvals
	if store == nil {
		store = approvals.NewMemory(cfg.Now)
	}
	return &Dispatcher{
		cfg:       cfg,
		reg:       reg,
		exec:      exec,
		log:       logger,
		policy:    newGate(cfg),
		redactor:  NewRedactor(cfg.Secrets),
		approvals: heldCalls{store: store, now: cfg.Now},
	}
}

// Registry returns the dispatcher's tool registry (for tool lists and prompts).
func (d *Dispatcher) Registry() *Registry { return d.reg }

// Redactor returns the redactor applied to every result.
func (d *Dispatcher) Redactor() *Redactor { return d.redactor }

// Config returns the effective configuration.
func (d *Dispatcher) Config() Config { return d.cfg }

// Run executes one tool call: look up, parse, validate, apply defaults,
// policy, approval, handler, execution, redaction and truncation, audit.
// It never panics and never returns a Go error: platform failures come
// back as StatusBusy/Unavailable/SessionNotFound/SessionLost/Internal with
// Result.Err set.
func (d *Dispatcher) Run(ctx context.Context, call Call) Result {
	start := time.Now()
	res, decision := d.run(ctx, call, nil)
	return d.finish(ctx, call, res, decision, start)
}

// Approve runs the call held under token, exactly once, and returns its
// Result. A token that is unknown, expired or already resolved gives a
// rejected Result and an error wrapping ErrApprovalNotFound.
func (d *Dispatcher) Approve(ctx context.Context, token string) (Result, error) {
	start := time.Now()
	p, err := d.approvals.Take(ctx, token)
	if err != nil {
		res := Result{Status: StatusRejected, Reason: "approval_not_found", Content: "approval token not found, expired or already used"}
		return d.finish(ctx, Call{Caller: "approval"}, res, "approval_not_found", start), fmt.Errorf("dispatcher: approve: %w", err)
	}
	res, decision := d.run(ctx, p.Call, &p)
	return d.finish(ctx, p.Call, res, "approved:"+decision, start), nil
}

// Reject resolves the call held under token without running it and
// returns the rejected Result (reason is shown to the model). A token that
// is unknown, expired or already resolved gives an error wrapping
// ErrApprovalNotFound.
func (d *Dispatcher) Reject(ctx context.Context, token, reason string) (Result, error) {
	start := time.Now()
	p, err := d.approvals.Take(ctx, token)
	if err != nil {
		res := Result{Status: StatusRejected, Reason: "approval_not_found", Content: "approval token not found, expired or already used"}
		return d.finish(ctx, Call{Caller: "approval"}, res, "approval_not_found", start), fmt.Errorf("dispatcher: reject: %w", err)
	}
	msg := "an operator rejected this call; it did not run"
	if strings.TrimSpace(reason) != "" {
		msg += ": " + reason
	}
	res := Result{Status: StatusRejected, Reason: "approval_rejected", Content: msg}
	return d.finish(ctx, p.Call, res, "rejected_by_approver", start), nil
}

// finish stamps, redacts, truncates and audits a result.
func (d *Dispatcher) finish(ctx context.Context, call Call, res Result, decision string, start time.Time) Result {
	res.CallID = call.ID
	res.Name = call.Name
	res.Content = d.redactor.String(res.Content)
	res.Content, _ = Truncate(res.Content, d.cfg.MaxContentChars, d.cfg.MaxContentBytes)
	for k, v := range res.Fields {
		res.Fields[k] = d.redactor.String(v)
	}
	res.DurationMS = time.Since(start).Milliseconds()
	d.audit(ctx, call, res, decision)
	return res
}

// run is Run without stamping and audit; held is set when an approved
// call is resumed. It returns the result and the audit decision.
func (d *Dispatcher) run(ctx context.Context, call Call, held *Pending) (res Result, decision string) {
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("%w: %v", ErrPanic, r)
			d.log.Error("dispatcher: recovered panic", "tool", capString(call.Name, 64), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			res, decision = Result{Status: StatusInternal, Reason: "panic", Content: "internal error while running the tool; the call did not complete", Err: err}, "failed"
		}
	}()
	rt, ok := d.reg.lookup(call.Name)
	if !ok {
		return Result{Status: StatusRejected, Reason: "unknown_tool",
			Content: fmt.Sprintf("unknown tool %s; valid tools: %s", quoteShort(call.Name), strings.Join(d.reg.Names(), ", "))}, "refused"
	}
	if len(call.Arguments) > d.cfg.MaxArgumentBytes {
		return Result{Status: StatusRejected, Reason: "arguments_too_large",
			Content: fmt.Sprintf("arguments are %d bytes; the limit is %d", len(call.Arguments), d.cfg.MaxArgumentBytes)}, "refused"
	}
	raw, aerr := decodeArguments(call.Arguments)
	if aerr != nil {
		content := aerr.Message
		if len(aerr.Fields) > 0 {
			content += "\n" + describeFields(aerr.Fields)
		}
		return Result{Status: StatusRejected, Reason: aerr.Reason, Content: content, Fields: aerr.Fields}, "refused"
	}
	if fields := validateArgs(rt, raw); fields != nil {
		return Result{Status: StatusRejected, Reason: "invalid_arguments", Fields: fields,
			Content: "invalid arguments for " + rt.Name + "; fix these and call again:\n" + describeFields(fields)}, "refused"
	}
	normalized, err := json.Marshal(raw)
	if err != nil {
		return Result{Status: StatusInternal, Reason: "encode_arguments", Content: "internal error encoding the arguments", Err: fmt.Errorf("dispatcher: encode arguments: %w", err)}, "failed"
	}
	args := Args(raw)
	applyDefaults(rt.Parameters, args)

	var approved []string
	if held != nil {
		approved = held.Rules
	}
	violations := d.policy.check(rt, call, args, approved)
	var needApproval []string
	for _, v := range violations {
		if !d.policy.needsApproval(v.Rule) && !slices.Contains(call.RequireApproval, v.Rule) {
			return Result{Status: StatusRejected, Reason: "policy:" + v.Rule, Content: policyContent(v, violations)}, "refused"
		}
		needApproval = append(needApproval, v.Rule)
	}
	if held == nil && (len(needApproval) > 0 || rt.NeedsApproval || slices.Contains(call.ApprovalTools, rt.Name)) {
		return d.hold(ctx, call, normalized, needApproval)
	}

	inv := Invocation{Call: call, Args: args}
	act, err := rt.Handler.Handle(ctx, inv)
	if err != nil {
		var ref *Refusal
		if errors.As(err, &ref) {
			return Result{Status: StatusRejected, Reason: ref.Reason, Content: ref.Message}, "refused"
		}
		return Result{Status: StatusError, Reason: "handler_error", Content: fmt.Sprintf("%s failed: %v", rt.Name, err)}, "failed"
	}
	if act.Request == nil {
		return Result{Status: StatusOK, Content: act.Content}, "answered"
	}
	return d.execute(ctx, call, rt.Name, act)
}

// policyContent explains the first refusing violation and lists the rest.
func policyContent(first violation, all []violation) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "refused by policy rule %s: %s", first.Rule, first.Message)
	for _, v := range all {
		if v.Rule != first.Rule {
			fmt.Fprintf(&sb, "\nalso: %s: %s", v.Rule, v.Message)
		}
	}
	sb.WriteString("\nThe call did not run.")
	return sb.String()
}

// hold stores the call for approval and returns the pending result.
func (d *Dispatcher) hold(ctx context.Context, call Call, normalized []byte, rules []string) (Result, string) {
	token, err := newToken()
	if err != nil {
		return Result{Status: StatusInternal, Reason: "approval_store", Content: "internal error holding the call for approval", Err: err}, "failed"
	}
	held := call
	held.Arguments = normalized
	p := Pending{Call: held, Rules: rules, Expires: d.cfg.Now().Add(d.cfg.ApprovalTTL)}
	if err := d.approvals.Put(ctx, token, p); err != nil {
		return Result{Status: StatusUnavailable, Reason: "approval_store", Content: "could not hold the call for approval; try later",
			Err: fmt.Errorf("dispatcher: store approval: %w", err)}, "failed"
	}
	why := "the tool " + call.Name + " needs human approval"
	if len(rules) > 0 {
		why = "policy rule(s) " + strings.Join(rules, ", ") + " need human approval"
	}
	return Result{Status: StatusPendingApproval, Reason: "approval_required", ApprovalToken: token,
		Content: why + "; the call has not run yet. Wait for the operator's decision."}, "pending_approval"
}

// execute sends the action's request to the Executor and renders the outcome.
func (d *Dispatcher) execute(ctx context.Context, call Call, tool string, act Action) (Result, string) {
	req := *act.Request
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
	req.Limits = lowerLimits(req.Limits, capLimits(call.Limits, overLimits(d.cfg.Ceiling, call.Ceiling)))
	if d.exec == nil {
		return platformResult(ErrNoExecutor, tool), "failed"
	}
	sctx, stopStream := d.streamContext(ctx)
	sres, err := d.safeExec(sctx, req)
	stopStream()
	if err != nil {
		return platformResult(err, tool), "failed"
	}
	red := d.redactor.rich(hideMount(d.redactor.Result(sres), req.Mount, call.MountName))
	res := Result{Sandbox: &red, Status: mapSandboxStatus(red.Status)}
	if res.Status == StatusRejected {
		res.Reason = "sandbox_rejected"
	}
	if act.SandboxPolicy && red.ExitCode == policy.MarkerExitCode {
		if rule, msg, ok := policy.ParseMarker(red.Stderr); ok {
			res.Status, res.Reason = StatusRejected, "policy:"+rule
			res.Content = "refused by policy rule " + rule + " (checked inside the sandbox after resolving symlinks): " + msg
			return res, "refused"
		}
	}
	if res.Status == StatusInternal {
		res.Reason = "unknown_sandbox_status"
		res.Err = fmt.Errorf("dispatcher: %s: sandbox returned unknown status %q", tool, red.Status)
	}
	res.Content = renderSandbox(red)
	return res, "executed"
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
	st := statusForError(err)
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
	return Result{Status: st, Reason: reason, Content: "status: " + string(st) + "\n" + msg,
		Err: fmt.Errorf("dispatcher: %s: %w", tool, err)}
}

// mapSandboxStatus maps a sandbox status to a dispatcher Status.
func mapSandboxStatus(s core.Status) Status {
	switch s {
	case core.StatusOK, core.StatusError, core.StatusTimeout, core.StatusOOM, core.StatusOutputLimit, core.StatusRejected:
		return Status(s)
	}
	return StatusInternal
}

// lowerLimits returns a with each field lowered to b's where b is set and
// smaller (an unset field of a takes b's).
func lowerLimits(a, b core.Limits) core.Limits {
	return mergeLimits(a, b, func(x, y float64) bool { return y > 0 && (x == 0 || y < x) })
}

// capLimits lowers each set field of l to c's where c is set: a call's
// limits can only go down from the ceiling (an unset field stays unset).
func capLimits(l, c core.Limits) core.Limits {
	return mergeLimits(l, c, func(x, y float64) bool { return x > 0 && y > 0 && x > y })
}

// mergeLimits sets each field of a to b's where take says so.
func mergeLimits(a, b core.Limits, take func(x, y float64) bool) core.Limits {
	i64 := func(x *int64, y int64) {
		if take(float64(*x), float64(y)) {
			*x = y
		}
	}
	i64(&a.Memory, b.Memory)
	i64(&a.Pids, b.Pids)
	i64(&a.TmpfsBytes, b.TmpfsBytes)
	i64(&a.NoFile, b.NoFile)
	i64(&a.FileSize, b.FileSize)
	if take(float64(a.Timeout), float64(b.Timeout)) {
		a.Timeout = b.Timeout
	}
	if take(float64(a.OutputBytes), float64(b.OutputBytes)) {
		a.OutputBytes = b.OutputBytes
	}
	if take(a.CPUs, b.CPUs) {
		a.CPUs = b.CPUs
	}
	return a
}

// overLimits returns base with each field set in over replaced by it.
func overLimits(base, over core.Limits) core.Limits {
	pick := func(x, y int64) int64 {
		if y > 0 {
			return y
		}
		return x
	}
	base.Memory = pick(base.Memory, over.Memory)
	base.Pids = pick(base.Pids, over.Pids)
	base.TmpfsBytes = pick(base.TmpfsBytes, over.TmpfsBytes)
	base.NoFile = pick(base.NoFile, over.NoFile)
	base.FileSize = pick(base.FileSize, over.FileSize)
	base.Timeout = time.Duration(pick(int64(base.Timeout), int64(over.Timeout)))
	base.OutputBytes = int(pick(int64(base.OutputBytes), int64(over.OutputBytes)))
	if over.CPUs > 0 {
		base.CPUs = over.CPUs
	}
	return base
}

// capString shortens s to n bytes on a character boundary.
func capString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cutPrefix(s, 0, n) + "..."
}
