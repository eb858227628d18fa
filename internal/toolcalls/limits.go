package toolcalls

import (
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/wire"
)

// Grants are what the keys may ask for: the server's defaults (which are
// also the ceiling of a request's limits), what a key's policy may grant
// at most, the default budgets, and the input folders the operator allows.
type Grants struct {
	Keys *keys.Set
	// InsecureLocal serves without keys: the loopback user's ceiling is
	// MaxLimits.
	InsecureLocal bool
	DefaultLimits core.Limits
	MaxLimits     core.Limits
	// SessionCallTimeout is the per-call limit of a session that names
	// none, and the least a session's timeout ceiling is (SessionLimits).
	SessionCallTimeout time.Duration
	DefaultBudget      keys.Budget
	// InputFolders are the host folders a call may mount read-only, by the
	// name a client uses. Clients never send host paths.
	InputFolders map[string]string
	Logger       *slog.Logger
}

// refusal is a request refused as invalid: a message for the caller and
// the details of the API's answer. It carries core.ErrInvalid.
type refusal struct {
	msg     string
	details map[string]any
}

// Error implements error.
func (e *refusal) Error() string { return e.msg }

// Unwrap makes errors.Is(err, core.ErrInvalid) true.
func (e *refusal) Unwrap() error { return core.ErrInvalid }

// ErrorDetails are the details of the API's error answer.
func (e *refusal) ErrorDetails() map[string]any { return e.details }

// invalid is a refusal with msg and no details.
func invalid(msg string) error { return &refusal{msg: msg} }

// Policy returns owner's policy, nil when its key has none.
func (g *Grants) Policy(owner string) *keys.Policy { return g.Keys.Policy(owner) }

// Ceiling returns the most a request of owner may ask for: its policy's
// limits where set (capped at MaxLimits), else the server defaults. With
// InsecureLocal there are no keys: the loopback user is the operator,
// whose ceiling is the server maximum, as for the local commands.
func (g *Grants) Ceiling(owner string) core.Limits {
	if g.InsecureLocal {
		return g.MaxLimits
	}
	return g.Policy(owner).Ceiling(g.DefaultLimits, g.MaxLimits)
}

// Limits converts a request's limits (nil: none) and checks them: none
// negative, none over owner's ceiling (a bad_request naming each field,
// the ceiling and where a higher one can come from).
func (g *Grants) Limits(owner string, wl *wire.Limits) (core.Limits, error) {
	l, err := g.convert(wl)
	if err != nil || wl == nil {
		return l, err
	}
	return l, g.checkCeiling(owner, l)
}

// convert turns a request's limits (nil: none) into core.Limits, none
// negative.
func (g *Grants) convert(wl *wire.Limits) (core.Limits, error) {
	if wl == nil {
		return core.Limits{}, nil
	}
	if wl.MemoryBytes < 0 || wl.CPUs < 0 || wl.Pids < 0 || wl.TimeoutSeconds < 0 || wl.OutputBytes < 0 ||
		wl.TmpfsBytes < 0 || wl.NoFile < 0 || wl.FileSizeBytes < 0 {
		return core.Limits{}, invalid("limits must not be negative")
	}
	l := core.Limits{Memory: wl.MemoryBytes, CPUs: wl.CPUs, Pids: wl.Pids,
		Timeout: core.Seconds(wl.TimeoutSeconds), OutputBytes: wl.OutputBytes, // saturating: 9.3e9 stays over the ceiling
		TmpfsBytes: wl.TmpfsBytes, NoFile: wl.NoFile, FileSize: wl.FileSizeBytes}
	return l, nil
}

// SessionLimits is Limits for a session: its timeout, the limit of each
// of its calls, may be up to SessionCallTimeout even where owner's ceiling
// is lower, and is SessionCallTimeout when the request names none.
func (g *Grants) SessionLimits(owner string, wl *wire.Limits) (core.Limits, error) {
	l, err := g.convert(wl)
	if err != nil {
		return l, err
	}
	ceiling := g.Ceiling(owner)
	ceiling.Timeout = max(ceiling.Timeout, g.SessionCallTimeout)
	if err := g.checkAgainst(ceiling, l); err != nil {
		return l, err
	}
	if l.Timeout == 0 {
		l.Timeout = g.SessionCallTimeout
	}
	return l, nil
}

// checkCeiling refuses any limit of l over owner's ceiling.
func (g *Grants) checkCeiling(owner string, l core.Limits) error {
	return g.checkAgainst(g.Ceiling(owner), l)
}

// checkAgainst refuses any limit of l over ceiling.
func (g *Grants) checkAgainst(ceiling core.Limits, l core.Limits) error {
	errs := l.Over(ceiling)
	if len(errs) == 0 {
		return nil
	}
	return invalid("limits may only lower this key's ceiling (the server defaults, unless the key's policy in the keys file grants more): " +
		strings.Join(errs, "; "))
}

// Budget returns owner's budgets: its policy's where set, else the
// server's.
func (g *Grants) Budget(owner string) keys.Budget {
	b := g.DefaultBudget
	if p := g.Policy(owner); p != nil {
		pb := p.Budget
		if pb.Sessions > 0 {
			b.Sessions = pb.Sessions
		}
		if pb.SessionMemory > 0 {
			b.SessionMemory = pb.SessionMemory
		}
		if pb.SessionCPUs > 0 {
			b.SessionCPUs = pb.SessionCPUs
		}
		if pb.ArtifactBytes > 0 {
			b.ArtifactBytes = pb.ArtifactBytes
		}
		if pb.ArtifactCount > 0 {
			b.ArtifactCount = pb.ArtifactCount
		}
	}
	return b
}

// Input resolves an input folder name ("" for none) to its host path. An
// unknown name, or a folder that is not there, is a bad_request that
// names it, never the host path.
func (g *Grants) Input(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	p, ok := g.InputFolders[name]
	if !ok {
		return "", &refusal{msg: fmt.Sprintf("unknown input folder %q", name), details: map[string]any{"allowed": g.InputNames()}}
	}
	if st, err := os.Stat(p); err != nil || !st.IsDir() {
		if g.Logger != nil {
			g.Logger.Warn("toolcalls: input folder is not available", "input", name, "path", p, "err", err)
		}
		return "", invalid(fmt.Sprintf("input folder %s is not available", name))
	}
	return p, nil
}

// InputNames lists the allowed input folder names, sorted.
func (g *Grants) InputNames() []string {
	names := make([]string, 0, len(g.InputFolders))
	for n := range g.InputFolders {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Environments lists the custom environments owner may use, as
// dispatcher.Call.Environments: every one ("*") for an admin key and
// without keys (InsecureLocal: the loopback user is the operator), else
// its policy's environments= (the built-in ones are always allowed).
func (g *Grants) Environments(owner string) []string {
	p := g.Policy(owner)
	if g.InsecureLocal || p.IsAdmin() {
		return []string{"*"}
	}
	if p == nil {
		return nil
	}
	return p.Environments
}
