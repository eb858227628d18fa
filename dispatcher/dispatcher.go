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
	"github.com/airlock-dev/airlock/egress"
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
	rules     *ruleChecker
	redactors *ownerRedactors
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
		rules:     newRuleChecker(cfg),
		redactors: newOwnerRedactors(cfg.Secrets, cfg.KeySecrets),
		approvals: heldCalls{store: store, now: cfg.Now},
	}
}

// Registry returns the dispatcher's tool registry (for tool lists and prompts).
func (d *Dispatcher) Registry() *Registry { return d.reg }

// Config returns the effective configuration.
func (d *Dispatcher) Config() Config { return d.cfg }

// Run executes one tool call: look up, parse, validate, apply defaults,
// policy, approval, Prepare, execution, redaction and truncation, audit.
// It never panics and never returns a Go error: platform failures come
// back as StatusBusy/Unavailable/SessionNotFound/SessionLost/Internal with
// Result.Code and Result.Err set.
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
	red := d.redactors.forOwner(call.Owner)
	res.CallID = call.ID
	res.Name = call.Name
	res.Content = red.String(res.Content)
	res.Content, _ = Truncate(res.Content, d.cfg.MaxContentChars, d.cfg.MaxContentBytes)
	for k, v := range res.Fields {
		res.Fields[k] = red.String(v)
	}
	res.Network = redactNetwork(red, res.Network)
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
			res, decision = failure(core.ErrInternal, "panic", "internal error while running the tool; the call did not complete", err), "failed"
		}
	}()
	rt, args, normalized, refused := d.parse(call)
	if refused != nil {
		return *refused, "refused"
	}
	if res, decision, stop := d.authorize(ctx, rt, call, args, normalized, held); stop {
		return res, decision
	}
	call.Egress = egress.Policy{}
	if d.cfg.Egress != nil {
		pol, err := d.cfg.Egress(call)
		if err != nil {
			return Result{Status: StatusRejected, Reason: "egress_policy", Code: core.ErrInvalid,
				Content: "the call's network policy is invalid: " + err.Error()}, "refused"
		}
		call.Egress = pol
	}
	if rt.Name == ToolFetchURL {
		if res := d.fetchEnvironment(ctx, &call); res != nil {
			return *res, "refused"
		}
	}
	act, err := rt.Prepare(ctx, Invocation{Call: call, Args: args})
	if err != nil {
		var ref *Refusal
		if errors.As(err, &ref) {
			return Result{Status: StatusRejected, Reason: ref.Reason, Content: ref.Message}, "refused"
		}
		return Result{Status: StatusError, Reason: "handler_error", Content: fmt.Sprintf("%s failed: %v", rt.Name, err)}, "failed"
	}
	if act.Request == nil {
		st := act.Status
		if st == "" {
			st = StatusOK
		}
		return Result{Status: st, Content: act.Content, Network: act.Network}, "answered"
	}
	if res := d.overCeiling(call, act.Request.Limits); res != nil {
		return *res, "refused"
	}
	return d.execute(ctx, call, rt.Name, act)
}

// parse looks the tool up and decodes, validates and completes the
// arguments (schema defaults applied); normalized is their JSON object.
// A refusal comes back as a rejected Result.
func (d *Dispatcher) parse(call Call) (rt *registered, args Args, normalized []byte, refused *Result) {
	rt, ok := d.reg.lookup(call.Name)
	if !ok {
		return nil, nil, nil, &Result{Status: StatusRejected, Reason: "unknown_tool",
			Content: fmt.Sprintf("unknown tool %s; valid tools: %s", quoteShort(call.Name), strings.Join(d.reg.Names(), ", "))}
	}
	if len(call.Arguments) > d.cfg.MaxArgumentBytes {
		return nil, nil, nil, &Result{Status: StatusRejected, Reason: "arguments_too_large",
			Content: fmt.Sprintf("arguments are %d bytes; the limit is %d", len(call.Arguments), d.cfg.MaxArgumentBytes)}
	}
	raw, aerr := decodeArguments(call.Arguments)
	if aerr != nil {
		content := aerr.Message
		if len(aerr.Fields) > 0 {
			content += "\n" + describeFields(aerr.Fields)
		}
		return nil, nil, nil, &Result{Status: StatusRejected, Reason: aerr.Reason, Content: content, Fields: aerr.Fields}
	}
	if res := d.timeoutPastSchema(rt, call, raw); res != nil {
		return nil, nil, nil, res
	}
	if fields := validateArgs(rt, raw); fields != nil {
		return nil, nil, nil, &Result{Status: StatusRejected, Reason: "invalid_arguments", Fields: fields,
			Content: "invalid arguments for " + rt.Name + "; fix these and call again:\n" + describeFields(fields)}
	}
	normalized, err := json.Marshal(raw)
	if err != nil {
		res := failure(core.ErrInternal, "encode_arguments", "internal error encoding the arguments", fmt.Errorf("dispatcher: encode arguments: %w", err))
		return nil, nil, nil, &res
	}
	args = Args(raw)
	applyDefaults(rt.Parameters, args)
	return rt, args, normalized, nil
}

// authorize applies the policy rules and the approval settings. stop is
// true when the call must not run now: refused by a rule, or held for
// approval (held is set when an approved call resumes).
func (d *Dispatcher) authorize(ctx context.Context, rt *registered, call Call, args Args, normalized []byte, held *Pending) (res Result, decision string, stop bool) {
	var approved []string
	if held != nil {
		approved = held.Rules
	}
	violations := d.rules.check(rt, call, args, approved)
	var needApproval []string
	for _, v := range violations {
		if !d.rules.needsApproval(v.Rule) && !slices.Contains(call.RequireApproval, v.Rule) {
			return Result{Status: StatusRejected, Reason: "policy:" + v.Rule, Content: policyContent(v, violations)}, "refused", true
		}
		needApproval = append(needApproval, v.Rule)
	}
	if held == nil && (len(needApproval) > 0 || rt.NeedsApproval || slices.Contains(call.ApprovalTools, rt.Name)) {
		res, decision := d.hold(ctx, call, normalized, needApproval)
		return res, decision, true
	}
	return Result{}, "", false
}

// overCeiling refuses limits the tool's arguments ask for (timeout_seconds)
// over the call's ceiling: Config.Ceiling with Call.Ceiling (the key's
// policy) over it. The rejection carries core.ErrInvalid in Result.Code,
// so a transport refuses it as a bad request naming the ceiling; the
// model reads the same text. Limits from the transport (Call.Limits) are
// the transport's to check; they only lower what runs.
func (d *Dispatcher) overCeiling(call Call, asked core.Limits) *Result {
	over := asked.Over(overLimits(d.cfg.Ceiling, call.Ceiling))
	if len(over) == 0 {
		return nil
	}
	return ceilingRefusal(over)
}

// ceilingRefusal is the rejection of arguments past the call's ceiling,
// naming each limit asked for and the ceiling it is over.
func ceilingRefusal(over []string) *Result {
	msg := "the arguments may only lower this key's ceiling (the server defaults, unless the key's policy in the keys file grants more): " +
		strings.Join(over, "; ") + ". The call did not run."
	return &Result{Status: StatusRejected, Reason: "over_ceiling", Content: msg, Code: core.ErrInvalid}
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
		return failure(core.ErrInternal, "approval_store", "internal error holding the call for approval", err), "failed"
	}
	held := call
	held.Arguments = normalized
	p := Pending{Call: held, Rules: rules, Expires: d.cfg.Now().Add(d.cfg.ApprovalTTL)}
	if err := d.approvals.Put(ctx, token, p); err != nil {
		return failure(core.ErrUnavailable, "approval_store", "could not hold the call for approval; try later",
			fmt.Errorf("dispatcher: store approval: %w", err)), "failed"
	}
	why := "the tool " + call.Name + " needs human approval"
	if len(rules) > 0 {
		why = "policy rule(s) " + strings.Join(rules, ", ") + " need human approval"
	}
	return Result{Status: StatusPendingApproval, Reason: "approval_required", ApprovalToken: token,
		Content: why + "; the call has not run yet. Wait for the operator's decision."}, "pending_approval"
}

// failure is the Result of a platform failure of class code.
func failure(code core.Code, reason, content string, err error) Result {
	return Result{Status: platformStatus(code), Code: code, Reason: reason, Content: content, Err: err}
}

// capString shortens s to n bytes on a character boundary.
func capString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cutPrefix(s, 0, n) + "..."
}

// violation is one policy rule that refused (or held) a call; the Result's
// Reason is "policy:" + its Rule.
type violation = policy.Violation
