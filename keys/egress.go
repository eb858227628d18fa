package keys

import (
	"fmt"

	"github.com/airlock-dev/airlock/egress"
)

// EgressFor is the egress policy of a call of a key with policy p (nil:
// none) in an environment whose spec has the egress list envEgress (nil:
// the spec has no egress list, the key's policy holds as is; empty: no
// network). An environment can only narrow its key's policy
// (egress.Narrow); a bad entry of the list is an error wrapping
// core.ErrInvalid that names it.
func EgressFor(p *Policy, envEgress []string) (egress.Policy, error) {
	if p == nil || p.Egress.Empty() {
		return egress.Policy{}, nil
	}
	pol, err := egress.Narrow(p.Egress, envEgress)
	if err != nil {
		return egress.Policy{}, fmt.Errorf("environment egress list: %w", err)
	}
	return pol, nil
}
