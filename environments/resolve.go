package environments

import (
	"context"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/core"
)

// ValidName reports whether name is a well-formed environment name.
func ValidName(name string) bool { return len(name) <= maxNameLen && nameRe.MatchString(name) }

// Target is the environment a call runs in, as the gate resolved it: a
// built-in one (Image empty: the sandbox's configured image of that name)
// or a custom one's checked image and content hash.
type Target struct {
	Name  string `json:"name"`
	Base  string `json:"base"`
	Image string `json:"image,omitempty"`
	Hash  string `json:"hash,omitempty"`
	// Egress is the spec's egress list, which can only narrow the calling
	// key's network policy (keys.EgressFor); nil when the spec has none
	// (the key's policy holds), empty when it asks for no network.
	Egress []string `json:"egress"`
}

// Resolver turns the environment a caller names into the image its calls
// use, refusing what the caller may not use. It reads the Registry, so
// every replica resolves alike.
type Resolver struct {
	reg *Registry
}

// NewResolver returns a resolver over reg.
func NewResolver(reg *Registry) *Resolver { return &Resolver{reg: reg} }

// Resolve returns the target of name for a caller who may use the
// environments may accepts (nil: every one). A malformed name is
// core.ErrInvalid, an unknown one core.ErrNotFound, one the caller may not
// use core.ErrForbidden, one with no checked image (its build failed, or
// it was never built) core.ErrConflict; each message names the
// environment. A built-in is always allowed.
func (r *Resolver) Resolve(ctx context.Context, name string, may func(string) bool) (Target, error) {
	if Builtin(name) {
		return Target{Name: name, Base: name}, nil
	}
	if !ValidName(name) {
		return Target{}, core.Errorf("environments", core.ErrInvalid, fmt.Sprintf("environment %q: not an environment name ([a-z0-9-], at most %d characters)", name, maxNameLen))
	}
	if r == nil || r.reg == nil {
		return Target{}, core.Errorf("environments", core.ErrNotFound, fmt.Sprintf("environment %q not found (this server has only the built-in environments python and shell)", name))
	}
	rec, _, err := r.reg.Get(ctx, name)
	if errors.Is(err, core.ErrNotFound) {
		return Target{}, core.Errorf("environments", core.ErrNotFound, fmt.Sprintf("environment %q not found", name))
	}
	if err != nil {
		return Target{}, err
	}
	if may != nil && !may(name) {
		return Target{}, core.Errorf("environments", core.ErrForbidden, fmt.Sprintf("environment %q is not allowed for this key (the keys file's environments= lists those it may use)", name))
	}
	if !rec.Usable() {
		why := "it has no built image"
		switch {
		case rec.Status == StatusFailed && rec.FailedStep != "":
			why = fmt.Sprintf("its last build failed at step %s: %s", rec.FailedStep, rec.Error)
		case rec.Status == StatusFailed:
			why = "its last build failed: " + rec.Error
		case rec.Status == StatusBuilding:
			why = "it is being built; retry when the build is done"
		}
		return Target{}, core.Errorf("environments", core.ErrConflict, fmt.Sprintf("environment %q cannot run calls: %s", name, why))
	}
	t := Target{Name: name, Base: rec.Base, Image: rec.Image, Hash: rec.Hash}
	if rec.Spec != nil {
		t.Egress = rec.Spec.Egress
	}
	return t, nil
}

// Apply sets req's environment fields to t.
func (t Target) Apply(req *core.Request) {
	req.Environment, req.Image, req.EnvironmentHash = t.Name, t.Image, t.Hash
}
