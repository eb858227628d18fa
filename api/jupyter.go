package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/jupyter"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/wire"
)

// mountJupyter adds the Jupyter kernel gateway (internal/jupyter): the
// kernels REST API and the kernels' websockets, behind the same keys (as
// `Authorization: token KEY`, Jupyter's scheme, or Bearer), rate limit and
// per-key concurrency as /v1: REST requests hold a call slot, a websocket
// a stream slot; an interrupt holds none, so it gets through busy cells.
func (s *Server) mountJupyter(r *gin.Engine) {
	gw := jupyter.New(jupyter.Config{
		CullIdle:   s.cfg.KernelCullIdle,
		WriteError: s.jupyterError,
		Stop:       s.draining,
		Logger:     s.log,
	}, jupyterBackend{s})
	serve := func(c *gin.Context) {
		gw.Handler().ServeHTTP(c.Writer, c.Request.WithContext(jupyter.WithOwner(c.Request.Context(), owner(c))))
	}
	auth := []gin.HandlerFunc{jupyterScheme, s.authenticate(), s.rateLimit()}
	quick := append(auth[:len(auth):len(auth)], s.timeout(s.cfg.RequestTimeout), serve)
	call := append(auth[:len(auth):len(auth)], s.limitConcurrency(s.callGate), s.timeout(s.cfg.ToolCallTimeout), limitBody(s.cfg.MaxBodyBytes), serve)
	for _, p := range []string{"/api", "/api/kernelspecs", "/api/kernelspecs/:name", "/kernelspecs/:name/*path", "/api/kernels", "/api/kernels/:id"} {
		r.GET(p, call...)
	}
	r.POST("/api/kernels", call...)
	r.DELETE("/api/kernels/:id", call...)
	r.POST("/api/kernels/:id/restart", call...)
	r.POST("/api/kernels/:id/interrupt", quick...)
	r.GET("/api/kernels/:id/channels", append(auth[:len(auth):len(auth)], s.limitConcurrency(s.streamGate), serve)...)
}

// jupyterScheme accepts Jupyter's `Authorization: token KEY` as the
// Bearer key authenticate reads.
func jupyterScheme(c *gin.Context) {
	h := strings.TrimSpace(c.GetHeader("Authorization"))
	if scheme, tok, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "token") {
		c.Request.Header.Set("Authorization", "Bearer "+strings.TrimSpace(tok))
	}
	c.Next()
}

// jupyterError answers a failed gateway request as every API error.
func (s *Server) jupyterError(w http.ResponseWriter, r *http.Request, err error) {
	e := toError(r.Context(), err)
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(e.body())
}

// kernelOps is what the gateway needs from Sessions beyond the session
// routes (the jobs client has it).
type kernelOps interface {
	IntrospectSession(ctx context.Context, owner, id, code string, q core.Introspect) (json.RawMessage, error)
	InputSession(ctx context.Context, owner, id, value string) (bool, error)
}

// jupyterBackend is the gateway's Backend over the API's own session
// records, budgets and the one dispatcher: a kernel is a session.
type jupyterBackend struct{ s *Server }

// asCore keeps an API error's code for the gateway (which reads codes).
func asCore(err error) error {
	if e, ok := err.(*Error); ok {
		return core.Errorf("api", e.Code, e.Message)
	}
	return err
}

// errNoSession is a session that is unknown or another key's.
var errNoSession = core.Errorf("jupyter", core.ErrNotFound, "kernel not found")

// Specs lists the environments a key may start kernels in: the built-in
// python one.
func (b jupyterBackend) Specs(string) []jupyter.Spec {
	return []jupyter.Spec{{Name: "python", DisplayName: "Python 3 (Airlock)", Language: "python"}}
}

// Open opens a session as POST /v1/sessions does (budgets included).
func (b jupyterBackend) Open(ctx context.Context, owner string, _ jupyter.Spec) (string, error) {
	s := b.s
	if s.deps.Sessions == nil {
		return "", core.Errorf("jupyter", core.ErrUnavailable, "sessions are not available on this server")
	}
	v, err := s.sessions.Open(ctx, owner, core.Limits{}, false, s.calls.Budget(owner), s.cfg.DefaultLimits)
	if err != nil {
		s.logPlatform("open kernel", owner, err)
		return "", err
	}
	return v.ID, nil
}

// record returns owner's session record id, or errNoSession.
func (b jupyterBackend) record(ctx context.Context, owner, id string, touch bool) (sessionrecords.Record, error) {
	rec, ok := b.s.records.Get(ctx, owner, id, touch)
	if !ok || b.s.deps.Sessions == nil {
		return sessionrecords.Record{}, errNoSession
	}
	return rec, nil
}

// kernelErr is err of a session operation, errNoSession when the sandbox
// no longer has the session.
func kernelErr(err error) error {
	if errors.Is(err, core.ErrNotFound) || errors.Is(err, core.ErrSessionLost) {
		return errNoSession
	}
	return err
}

// Close closes the session as DELETE /v1/sessions/{id} does.
func (b jupyterBackend) Close(ctx context.Context, owner, id string) error {
	rec, err := b.record(ctx, owner, id, false)
	if err != nil {
		return err
	}
	return kernelErr(b.s.sessions.Close(ctx, rec))
}

// view turns the API's view of a session into the gateway's.
func view(v wire.Session) jupyter.Session {
	out := jupyter.Session{ID: v.ID, Created: v.Created, LastUsed: v.LastUsed}
	if v.State == "idle" || v.State == "busy" {
		out.State = v.State
	}
	if v.ExecutionCount != nil {
		out.ExecCount = *v.ExecutionCount
	}
	return out
}

// Sessions lists owner's live sessions.
func (b jupyterBackend) Sessions(ctx context.Context, owner string) ([]jupyter.Session, error) {
	out := []jupyter.Session{}
	for _, v := range b.s.sessions.List(ctx, owner) {
		out = append(out, view(v))
	}
	return out, nil
}

// Session describes one of owner's live sessions.
func (b jupyterBackend) Session(ctx context.Context, owner, id string) (jupyter.Session, error) {
	rec, err := b.record(ctx, owner, id, false)
	if err != nil {
		return jupyter.Session{}, err
	}
	v, err := b.s.sessions.View(ctx, rec)
	if err != nil {
		return jupyter.Session{}, kernelErr(err)
	}
	return view(v), nil
}

// Execute runs a cell as run_python in the session through the
// dispatcher, as POST /v1/sessions/{id}/tool-calls does: the key's rate
// limit, policy, approvals and timeout apply and the call is audited.
func (b jupyterBackend) Execute(ctx context.Context, owner, id string, cell jupyter.Cell) (core.Result, error) {
	s := b.s
	if ok, _ := s.limiter.allow(owner); !ok {
		return core.Result{}, core.Errorf("jupyter", core.ErrRateLimited, "rate limit exceeded for this API key")
	}
	rec, err := b.record(ctx, owner, id, true)
	if err != nil {
		return core.Result{}, err
	}
	ceiling := s.calls.Ceiling(owner)
	args := map[string]any{"code": cell.Code}
	if t := int(ceiling.Timeout.Seconds()); t > 0 {
		args["timeout_seconds"] = t
	}
	raw, _ := json.Marshal(args)
	call := dispatcher.Call{ID: newID("call_"), Name: dispatcher.ToolRunPython, Arguments: raw, Owner: owner,
		SessionID: rec.ID, Ceiling: ceiling, Background: rec.Background, Caller: "jupyter",
		AllowStdin: cell.AllowStdin, Notebook: true}
	if p := s.calls.Policy(owner); p != nil {
		call.ApprovalTools, call.RequireApproval = p.ApprovalTools, p.RequireApproval
	}
	res := s.deps.Dispatcher.Run(ctx, call)
	_, e := s.finishCall(ctx, call, res)
	switch {
	case res.Sandbox != nil:
		return *res.Sandbox, nil
	case res.Status == dispatcher.StatusRejected || res.Status == dispatcher.StatusPendingApproval:
		return core.Result{Status: core.StatusRejected, ExitCode: -1, Message: res.Content}, nil
	case e != nil:
		return core.Result{}, asCore(e)
	}
	return core.Result{Status: core.StatusError, Message: res.Content}, nil
}

// Interrupt interrupts the session's running call.
func (b jupyterBackend) Interrupt(ctx context.Context, owner, id string) error {
	rec, err := b.record(ctx, owner, id, false)
	if err != nil {
		return err
	}
	_, err = b.s.sessions.Interrupt(ctx, rec)
	return err
}

// Restart replaces the session's Python process.
func (b jupyterBackend) Restart(ctx context.Context, owner, id string) error {
	rec, err := b.record(ctx, owner, id, true)
	if err != nil {
		return err
	}
	_, err = b.s.sessions.Restart(ctx, rec)
	return err
}

// ops returns the sessions' kernel operations, if the backend has them.
func (b jupyterBackend) ops() (kernelOps, error) {
	k, ok := b.s.deps.Sessions.(kernelOps)
	if !ok {
		return nil, core.Errorf("jupyter", core.ErrUnavailable, "this server's sessions cannot answer kernel requests")
	}
	return k, nil
}

// Introspect asks the session's kernel about code.
func (b jupyterBackend) Introspect(ctx context.Context, owner, id, code string, q core.Introspect) (json.RawMessage, error) {
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
func (b jupyterBackend) Input(ctx context.Context, owner, id, value string) error {
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
