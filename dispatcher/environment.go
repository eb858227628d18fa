package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/environments"
)

// EnvironmentResolver resolves the environment a call names to the image
// its calls use, refusing one the caller may not use (*environments.Resolver).
type EnvironmentResolver interface {
	Resolve(ctx context.Context, name string, may func(string) bool) (environments.Target, error)
}

// AllEnvironments in Call.Environments allows every environment.
const AllEnvironments = "*"

// environment sets req's environment: the call's, else the built-in one
// of its language (python, or shell for execute_shell). A session call
// keeps its session's (fixed when it opened). A name that is malformed,
// unknown, not allowed to the caller or not built refuses the call with
// Result.Code core.ErrInvalid, ErrNotFound, ErrForbidden or ErrConflict,
// which a transport answers as 400, 404, 403 or 409, naming it.
func (d *Dispatcher) environment(ctx context.Context, call Call, req *core.Request) *Result {
	if req.SessionID != "" {
		return nil
	}
	name := call.Environment
	if name == "" {
		name = environments.Python
		if req.Language == core.Shell {
			name = environments.Shell
		}
	}
	may := func(n string) bool {
		return slices.Contains(call.Environments, AllEnvironments) || slices.Contains(call.Environments, n)
	}
	var t environments.Target
	var err error
	if d.cfg.Environments != nil {
		t, err = d.cfg.Environments.Resolve(ctx, name, may)
	} else {
		t, err = (*environments.Resolver)(nil).Resolve(ctx, name, may)
	}
	if err != nil {
		msg := err.Error()
		var ce *core.Error
		if errors.As(err, &ce) {
			msg = ce.Message()
		}
		return &Result{Status: StatusRejected, Reason: "environment", Content: msg + ". The call did not run.", Code: core.CodeOf(err), Err: err}
	}
	t.Apply(req)
	if t.Egress != nil && req.Egress != "" {
		if res := narrowEgress(req, t); res != nil {
			return res
		}
	}
	return nil
}

// narrowEgress narrows req's network policy by the egress list of its
// environment t, which can only take hosts away (egress.Narrow).
func narrowEgress(req *core.Request, t environments.Target) *Result {
	pol, err := egress.Parse(req.Egress)
	if err == nil {
		pol, err = egress.Narrow(pol, t.Egress)
	}
	if err != nil {
		return &Result{Status: StatusRejected, Reason: "egress_policy", Code: core.ErrInvalid,
			Content: fmt.Sprintf("environment %q: its egress list is invalid: %v. The call did not run.", t.Name, err)}
	}
	req.Egress = ""
	if !pol.Empty() {
		req.Egress = pol.String()
	}
	return nil
}
