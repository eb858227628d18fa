package dispatcher

import (
	"context"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/egress"
)

// fetchEnvironment applies the environment a fetch_url call names (in a
// session: its session's, which the transport sets) before it fetches: the name is resolved for the caller as for a sandbox
// call (unknown, forbidden or unbuilt refuses it, with the code) and its
// egress list narrows call.Egress. fetch_url answers in Airlock, so it
// never reaches execute, where sandbox calls get this.
func (d *Dispatcher) fetchEnvironment(ctx context.Context, call *Call) *Result {
	if call.Environment == "" {
		return nil
	}
	req := core.Request{}
	if !call.Egress.Empty() {
		req.Egress = call.Egress.String()
	}
	if res := d.environment(ctx, *call, &req); res != nil {
		return res
	}
	pol := egress.Policy{}
	if req.Egress != "" {
		p, err := egress.Parse(req.Egress)
		if err != nil {
			return &Result{Status: StatusRejected, Reason: "egress_policy", Code: core.ErrInvalid,
				Content: "the call's network policy is invalid: " + err.Error()}
		}
		pol = p
	}
	call.Egress = pol
	return nil
}
