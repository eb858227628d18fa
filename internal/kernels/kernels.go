// Package kernels is the Jupyter gateway's backend (jupyter.Backend) over
// Airlock's own services: a kernel is a session (opened within the key's
// budgets, internal/sessions), and a cell is a run_python call in it
// through the one dispatcher, with the key's rate limit, ceiling, policy
// and approvals, recorded as any tool call is (internal/toolcalls).
package kernels

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/internal/jupyter"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/internal/sessions"
	"github.com/airlock-dev/airlock/internal/toolcalls"
	"github.com/airlock-dev/airlock/wire"
)

// Ops are the kernel operations of the sandbox's sessions beyond the
// session routes' (the jobs client has them).
type Ops interface {
	IntrospectSession(ctx context.Context, owner, id, code string, q core.Introspect) (json.RawMessage, error)
	InputSession(ctx context.Context, owner, id, value string) (bool, error)
}

// Backend implements jupyter.Backend. Its zero Sessions-less form (nil
// Ops and Available false) answers every kernel unavailable.
type Backend struct {
	// Available says the server has sessions at all.
	Available  bool
	Service    *sessions.Service // the sessions kernels are
	Records    *sessionrecords.Store
	Calls      *toolcalls.Service
	Dispatcher interface {
		Run(ctx context.Context, call dispatcher.Call) dispatcher.Result
	}
	// Ops answers completion, inspection and input(); nil: unavailable.
	Ops Ops
	// Allow takes one of the key's rate tokens.
	Allow func(owner string) bool
	// Defaults are the sandbox's default limits, which a kernel's
	// session counts against its budgets.
	Defaults core.Limits
	// EnvironmentNames lists the custom Python environments owner may
	// use that can run calls (one kernelspec each, airlock-NAME); nil:
	// only the built-in python kernelspec.
	EnvironmentNames func(ctx context.Context, owner string) []string
	// Resolve resolves an environment for owner (as POST /v1/sessions
	// does) for a kernel started with its kernelspec.
	Resolve func(ctx context.Context, owner, name string) (environments.Target, error)
}

// errNoKernel is a kernel that is unknown or another key's.
var errNoKernel = core.Errorf("jupyter", core.ErrNotFound, "kernel not found")

// Specs lists the kernels a key may start: the built-in python one, then
// one per custom environment it may use (EnvironmentNames).
func (b *Backend) Specs(owner string) []jupyter.Spec {
	return append([]jupyter.Spec{{Name: "python", DisplayName: "Python 3 (Airlock)", Language: "python"}}, b.envSpecs(owner)...)
}

// Open opens a session as POST /v1/sessions does (budgets included).
func (b *Backend) Open(ctx context.Context, owner string, spec jupyter.Spec) (string, error) {
	if !b.Available {
		return "", core.Errorf("jupyter", core.ErrUnavailable, "sessions are not available on this server")
	}
	limits, err := b.Calls.SessionLimits(owner, nil) // a notebook's cells get the session call timeout
	if err != nil {
		return "", err
	}
	env, err := b.openTarget(ctx, owner, spec)
	if err != nil {
		return "", err
	}
	v, err := b.Service.OpenIn(ctx, owner, env, limits, false, b.Calls.Budget(owner), b.Defaults)
	if err != nil {
		return "", err
	}
	return v.ID, nil
}

// record returns owner's session record id, or errNoKernel.
func (b *Backend) record(ctx context.Context, owner, id string, touch bool) (sessionrecords.Record, error) {
	rec, ok := b.Records.Get(ctx, owner, id, touch)
	if !ok || !b.Available {
		return sessionrecords.Record{}, errNoKernel
	}
	return rec, nil
}

// kernelErr is err of a session operation, errNoKernel when the sandbox
// no longer has the session.
func kernelErr(err error) error {
	if errors.Is(err, core.ErrNotFound) || errors.Is(err, core.ErrSessionLost) {
		return errNoKernel
	}
	return err
}

// Close closes the session as DELETE /v1/sessions/{id} does.
func (b *Backend) Close(ctx context.Context, owner, id string) error {
	rec, err := b.record(ctx, owner, id, false)
	if err != nil {
		return err
	}
	return kernelErr(b.Service.Close(ctx, rec))
}

// kernel turns a session's view into the gateway's.
func kernel(v wire.Session) jupyter.Session {
	out := jupyter.Session{ID: v.ID, Created: v.Created, LastUsed: v.LastUsed, Environment: v.Environment}
	if v.State == wire.SessionIdle || v.State == wire.SessionBusy {
		out.State = v.State
	}
	if v.State == wire.SessionHibernated { // its next cell wakes it (issue 30)
		out.State = wire.SessionIdle
	}
	if v.ExecutionCount != nil {
		out.ExecCount = *v.ExecutionCount
	}
	return out
}

// Sessions lists owner's live sessions.
func (b *Backend) Sessions(ctx context.Context, owner string) ([]jupyter.Session, error) {
	out := []jupyter.Session{}
	for _, v := range b.Service.List(ctx, owner) {
		out = append(out, kernel(v))
	}
	return out, nil
}

// Session describes one of owner's live sessions.
func (b *Backend) Session(ctx context.Context, owner, id string) (jupyter.Session, error) {
	rec, err := b.record(ctx, owner, id, false)
	if err != nil {
		return jupyter.Session{}, err
	}
	v, err := b.Service.View(ctx, rec)
	if err != nil {
		return jupyter.Session{}, kernelErr(err)
	}
	return kernel(v), nil
}

// Execute runs a cell as run_python in the session through the
// dispatcher, as POST /v1/sessions/{id}/tool-calls does: the key's rate
// limit, policy, approvals and timeout apply and the call is audited.
func (b *Backend) Execute(ctx context.Context, owner, id string, cell jupyter.Cell) (core.Result, error) {
	if !b.Allow(owner) {
		return core.Result{}, core.Errorf("jupyter", core.ErrRateLimited, "rate limit exceeded for this API key")
	}
	rec, err := b.record(ctx, owner, id, true)
	if err != nil {
		return core.Result{}, err
	}
	ceiling := b.Calls.Ceiling(owner)
	args := map[string]any{"code": cell.Code}
	if t := int(ceiling.Timeout.Seconds()); t > 0 {
		args["timeout_seconds"] = t
	}
	raw, _ := json.Marshal(args)
	call := dispatcher.Call{ID: "call_" + strings.ToLower(rand.Text()), Name: dispatcher.ToolRunPython, Arguments: raw, Owner: owner,
		SessionID: rec.ID, Ceiling: ceiling, Background: rec.Background, Caller: "jupyter",
		AllowStdin: cell.AllowStdin, Notebook: true}
	if p := b.Calls.Policy(owner); p != nil {
		call.ApprovalTools, call.RequireApproval = p.ApprovalTools, p.RequireApproval
	}
	res := b.Dispatcher.Run(ctx, call)
	b.Calls.Finish(ctx, call, res)
	switch {
	case res.Sandbox != nil:
		return *res.Sandbox, nil
	case res.Status == dispatcher.StatusRejected || res.Status == dispatcher.StatusPendingApproval:
		return core.Result{Status: core.StatusRejected, ExitCode: -1, Message: res.Content}, nil
	}
	if err := toolcalls.Failure(res); err != nil {
		return core.Result{}, err
	}
	return core.Result{Status: core.StatusError, Message: res.Content}, nil
}

// Interrupt interrupts the session's running call.
func (b *Backend) Interrupt(ctx context.Context, owner, id string) error {
	rec, err := b.record(ctx, owner, id, false)
	if err != nil {
		return err
	}
	_, err = b.Service.Interrupt(ctx, rec)
	return err
}

// Restart replaces the session's Python process.
func (b *Backend) Restart(ctx context.Context, owner, id string) error {
	rec, err := b.record(ctx, owner, id, true)
	if err != nil {
		return err
	}
	_, err = b.Service.Restart(ctx, rec)
	return err
}

// ops returns the sessions' kernel operations, if there are any.
func (b *Backend) ops() (Ops, error) {
	if b.Ops == nil {
		return nil, core.Errorf("jupyter", core.ErrUnavailable, "this server's sessions cannot answer kernel requests")
	}
	return b.Ops, nil
}

// Introspect asks the session's kernel about code.
func (b *Backend) Introspect(ctx context.Context, owner, id, code string, q core.Introspect) (json.RawMessage, error) {
	rec, err := b.record(ctx, owner, id, true)
	if err != nil {
		return nil, err
	}
	k, err := b.ops()
	if err != nil {
		return nil, err
	}
	return k.IntrospectSession(ctx, rec.Owner, rec.ID, code, q)
}

// Input answers the input() the session's running call waits in.
func (b *Backend) Input(ctx context.Context, owner, id, value string) error {
	rec, err := b.record(ctx, owner, id, false)
	if err != nil {
		return err
	}
	k, err := b.ops()
	if err != nil {
		return err
	}
	_, err = k.InputSession(ctx, rec.Owner, rec.ID, value)
	return err
}
