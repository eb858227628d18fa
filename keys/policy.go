package keys

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docker/go-units"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/internal/secrets"
)

// Policy is what a key may use, from its line in the keys file. Zero
// fields mean the server's values (the api server's default limits and budgets).
type Policy struct {
	// Limits are the most a request of this key may ask for; they may be
	// above the server defaults, never above the server maximum.
	Limits core.Limits
	// Budget overrides the server's per-key budgets.
	Budget Budget
	// Background allows sessions opened with {"background": true}.
	Background bool
	// ApprovalTools are tools whose every call by this key waits for
	// approval, on top of the server's --approval-tools.
	ApprovalTools []string
	// RequireApproval are policy rules that hold this key's calls for
	// approval instead of refusing them, on top of --require-approval.
	RequireApproval []string
	// Secrets are the values of the key's secrets_file, redacted from this
	// key's results only (the server's --secrets-file is redacted from
	// everyone's). They never print: see secrets.Values.
	Secrets secrets.Values
	// Egress is where this key's sandboxes and fetch_url may connect
	// (egress= and egress_methods=; issue 29). The zero Policy, the
	// default, allows nothing: no network.
	Egress egress.Policy
	// Environments lists the custom environments (issue 28) the key may
	// use (environments=geo,lint); the built-in ones are always allowed.
	Environments []string
	// Admin marks an admin key (admin=true): it manages environments
	// (POST/DELETE /v1/environments) and may use every one.
	Admin bool
}

// MayUseEnvironment reports whether a key of policy p may run calls in
// the environment name: a built-in (python, shell) always, an admin key
// every one, another key those its environments= lists.
func (p *Policy) MayUseEnvironment(name string) bool {
	if name == "" || name == "python" || name == "shell" {
		return true
	}
	if p == nil {
		return false
	}
	return p.Admin || slices.Contains(p.Environments, name)
}

// IsAdmin reports whether p is an admin key's policy.
func (p *Policy) IsAdmin() bool { return p != nil && p.Admin }

// Budget is what one key may hold at once. Zero fields mean no budget.
type Budget struct {
	Sessions      int     // open sessions
	SessionMemory int64   // memory of all open sessions together, bytes
	SessionCPUs   float64 // CPUs of all open sessions together
	ArtifactBytes int64   // bytes of stored artifacts
	ArtifactCount int     // stored artifacts
}

// parsePolicy reads "name=value" fields of a keys-file line: the limits
// memory_bytes, cpus, pids, timeout_seconds, output_bytes, tmpfs_bytes,
// nofile, file_size_bytes (sizes accept units: 1g, 512m), the budgets
// max_sessions, session_memory_bytes, session_cpus, artifact_bytes,
// artifact_count, background=true|false, the approval settings
// approval_tools=TOOL,TOOL and require_approval=RULE,RULE (names checked
// against the built-in tools and the policy rules), and
// egress=HOST[:PORT],... and egress_methods=METHOD,... (the key's network
// policy, egress.FromKeys) and pip_packages=NAME,... (the Python packages
// its calls may download through the proxy, egress.ParsePackages), and secrets_file=PATH (a file of secret values, one per line, read now; a
// relative PATH is relative to dir, the keys file's folder).
func parsePolicy(fields []string, dir string) (*Policy, error) {
	p := &Policy{}
	var egressHosts, egressMethods string
	var pipPackages []string // nil: pip_packages= absent
	for _, f := range fields {
		name, val, ok := strings.Cut(f, "=")
		if !ok || val == "" {
			return nil, fmt.Errorf("policy field %q: want name=value", f)
		}
		var err error
		switch name {
		case "memory_bytes":
			p.Limits.Memory, err = units.RAMInBytes(val)
		case "cpus":
			p.Limits.CPUs, err = strconv.ParseFloat(val, 64)
		case "pids":
			p.Limits.Pids, err = strconv.ParseInt(val, 10, 64)
		case "timeout_seconds":
			var s float64
			if s, err = strconv.ParseFloat(val, 64); err == nil && (s < 0 || core.Seconds(s) > maxPolicyTimeout) {
				err = fmt.Errorf("%s is not a number of seconds between 0 and %g", val, maxPolicyTimeout.Seconds())
			}
			p.Limits.Timeout = core.Seconds(s)
		case "output_bytes":
			var n int64
			n, err = units.RAMInBytes(val)
			p.Limits.OutputBytes = int(n)
		case "tmpfs_bytes":
			p.Limits.TmpfsBytes, err = units.RAMInBytes(val)
		case "nofile":
			p.Limits.NoFile, err = strconv.ParseInt(val, 10, 64)
		case "file_size_bytes":
			p.Limits.FileSize, err = units.RAMInBytes(val)
		case "max_sessions":
			p.Budget.Sessions, err = strconv.Atoi(val)
		case "session_memory_bytes":
			p.Budget.SessionMemory, err = units.RAMInBytes(val)
		case "session_cpus":
			p.Budget.SessionCPUs, err = strconv.ParseFloat(val, 64)
		case "artifact_bytes":
			p.Budget.ArtifactBytes, err = units.RAMInBytes(val)
		case "artifact_count":
			p.Budget.ArtifactCount, err = strconv.Atoi(val)
		case "background":
			p.Background, err = strconv.ParseBool(val)
		case "approval_tools":
			p.ApprovalTools = dispatcher.SplitNames(val)
			err = dispatcher.CheckApprovalNames(p.ApprovalTools, nil)
		case "require_approval":
			p.RequireApproval = dispatcher.SplitNames(val)
			err = dispatcher.CheckApprovalNames(nil, p.RequireApproval)
		case "egress":
			egressHosts = val
		case "egress_methods":
			egressMethods = val
		case "pip_packages":
			pipPackages, err = egress.ParsePackages(val)
		case "environments":
			p.Environments = dispatcher.SplitNames(val)
			for _, n := range p.Environments {
				if !environments.ValidName(n) {
					err = fmt.Errorf("%q is not an environment name ([a-z0-9-])", n)
				}
			}
		case "admin":
			p.Admin, err = strconv.ParseBool(val)
		case "secrets_file":
			if !filepath.IsAbs(val) {
				val = filepath.Join(dir, val)
			}
			p.Secrets, err = secrets.ReadFile(val)
		default:
			return nil, fmt.Errorf("unknown policy field %q", name)
		}
		if err != nil {
			return nil, fmt.Errorf("policy field %s: %w", name, err)
		}
	}
	var err error
	if p.Egress, err = egress.FromKeys(egressHosts, egressMethods); err != nil {
		return nil, fmt.Errorf("policy field egress: %w", err)
	}
	if pipPackages != nil {
		if p.Egress.Empty() {
			return nil, fmt.Errorf("policy field pip_packages: without egress hosts it allows nothing")
		}
		p.Egress = p.Egress.WithPackages(pipPackages)
	}
	return p, nil
}

// maxPolicyTimeout bounds a policy's timeout_seconds (the server maximum
// then caps what the key really gets).
const maxPolicyTimeout = 24 * time.Hour

// Ceiling is the most a request of this key may ask for: the policy's
// limits where set, capped at max, else the server defaults. A nil policy
// has the defaults.
func (p *Policy) Ceiling(defaults, max core.Limits) core.Limits {
	c := defaults
	if p == nil {
		return c
	}
	up := func(def, grant, max int64) int64 {
		if grant <= 0 {
			return def
		}
		if max > 0 && grant > max {
			return max
		}
		return grant
	}
	g := p.Limits
	c.Memory = up(c.Memory, g.Memory, max.Memory)
	c.Pids = up(c.Pids, g.Pids, max.Pids)
	c.Timeout = time.Duration(up(int64(c.Timeout), int64(g.Timeout), int64(max.Timeout)))
	c.OutputBytes = int(up(int64(c.OutputBytes), int64(g.OutputBytes), int64(max.OutputBytes)))
	c.TmpfsBytes = up(c.TmpfsBytes, g.TmpfsBytes, max.TmpfsBytes)
	c.NoFile = up(c.NoFile, g.NoFile, max.NoFile)
	c.FileSize = up(c.FileSize, g.FileSize, max.FileSize)
	if g.CPUs > 0 {
		c.CPUs = g.CPUs
		if max.CPUs > 0 && c.CPUs > max.CPUs {
			c.CPUs = max.CPUs
		}
	}
	return c
}
