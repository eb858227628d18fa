package api

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/docker/go-units"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
)

// Policy is what a key may use, from its line in the keys file. Zero
// fields mean the server's values (Config.DefaultLimits and Config.Budget).
type Policy struct {
	// Limits are the most a request of this key may ask for; they may be
	// above the server defaults, never above Config.MaxLimits.
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
}

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
// artifact_count, background=true|false, and the approval settings
// approval_tools=TOOL,TOOL and require_approval=RULE,RULE (names checked
// against the built-in tools and the policy rules).
func parsePolicy(fields []string) (*Policy, error) {
	p := &Policy{}
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
			s, err = strconv.ParseFloat(val, 64)
			p.Limits.Timeout = time.Duration(s * float64(time.Second))
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
		default:
			return nil, fmt.Errorf("unknown policy field %q", name)
		}
		if err != nil {
			return nil, fmt.Errorf("policy field %s: %w", name, err)
		}
	}
	return p, nil
}

// ceiling returns the most a request of owner may ask for: its policy's
// limits where set (capped at Config.MaxLimits), else the server defaults.
func (s *Server) ceiling(owner string) core.Limits {
	c := s.cfg.DefaultLimits
	p := s.policy(owner)
	if p == nil {
		return c
	}
	m := s.cfg.MaxLimits
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
	c.Memory = up(c.Memory, g.Memory, m.Memory)
	c.Pids = up(c.Pids, g.Pids, m.Pids)
	c.Timeout = time.Duration(up(int64(c.Timeout), int64(g.Timeout), int64(m.Timeout)))
	c.OutputBytes = int(up(int64(c.OutputBytes), int64(g.OutputBytes), int64(m.OutputBytes)))
	c.TmpfsBytes = up(c.TmpfsBytes, g.TmpfsBytes, m.TmpfsBytes)
	c.NoFile = up(c.NoFile, g.NoFile, m.NoFile)
	c.FileSize = up(c.FileSize, g.FileSize, m.FileSize)
	if g.CPUs > 0 {
		c.CPUs = g.CPUs
		if m.CPUs > 0 && c.CPUs > m.CPUs {
			c.CPUs = m.CPUs
		}
	}
	return c
}

// checkCeiling refuses (400) any limit of a request over owner's ceiling,
// naming the field, the ceiling and where a higher one can come from.
func (s *Server) checkCeiling(owner string, l core.Limits) error {
	c := s.ceiling(owner)
	var errs []string
	over := func(name string, v, max int64) {
		if max > 0 && v > max {
			errs = append(errs, fmt.Sprintf("%s %d is over %d", name, v, max))
		}
	}
	over("memory_bytes", l.Memory, c.Memory)
	over("pids", l.Pids, c.Pids)
	over("output_bytes", int64(l.OutputBytes), int64(c.OutputBytes))
	over("tmpfs_bytes", l.TmpfsBytes, c.TmpfsBytes)
	over("nofile", l.NoFile, c.NoFile)
	over("file_size_bytes", l.FileSize, c.FileSize)
	if c.Timeout > 0 && l.Timeout > c.Timeout {
		errs = append(errs, fmt.Sprintf("timeout_seconds %g is over %g", l.Timeout.Seconds(), c.Timeout.Seconds()))
	}
	if c.CPUs > 0 && l.CPUs > c.CPUs {
		errs = append(errs, fmt.Sprintf("cpus %g is over %g", l.CPUs, c.CPUs))
	}
	if len(errs) == 0 {
		return nil
	}
	return newError(core.ErrInvalid, "limits may only lower this key's ceiling (the server defaults, unless the key's policy in the keys file grants more): "+
		strings.Join(errs, "; "))
}

// policy returns owner's policy, nil when its key has none.
func (s *Server) policy(owner string) *Policy {
	return s.cfg.Keys.Policy(owner)
}

// budget returns owner's budgets: its policy's where set, else the server's.
func (s *Server) budget(owner string) Budget {
	b := s.cfg.Budget
	if p := s.policy(owner); p != nil {
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

// effective fills a request's zero limits from the server defaults: what
// the sandbox will give it, as counted against the budgets.
func (s *Server) effective(l core.Limits) core.Limits {
	d := s.cfg.DefaultLimits
	if l.Memory == 0 {
		l.Memory = d.Memory
	}
	if l.CPUs == 0 {
		l.CPUs = d.CPUs
	}
	return l
}

// checkSessionBudget refuses (429 quota) a new session of owner with
// limits l when it would pass one of owner's session budgets, naming it.
func (s *Server) checkSessionBudget(owner string, l core.Limits) error {
	b := s.budget(owner)
	n, mem, cpus := s.sessions.usage(owner, s.effective)
	l = s.effective(l)
	quota := func(name string, limit any, msg string) error {
		return newError(core.ErrQuota, msg).withDetails(map[string]any{"budget": name, "limit": limit})
	}
	switch {
	case b.Sessions > 0 && n+1 > b.Sessions:
		return quota("sessions", b.Sessions, fmt.Sprintf("budget sessions: this key has %d open sessions, its maximum; close one first", n))
	case b.SessionMemory > 0 && mem+l.Memory > b.SessionMemory:
		return quota("session_memory_bytes", b.SessionMemory, fmt.Sprintf("budget session_memory_bytes: this key's sessions would hold %d bytes of memory, over its %d", mem+l.Memory, b.SessionMemory))
	case b.SessionCPUs > 0 && cpus+l.CPUs > b.SessionCPUs+1e-9:
		return quota("session_cpus", b.SessionCPUs, fmt.Sprintf("budget session_cpus: this key's sessions would hold %g CPUs, over its %g", cpus+l.CPUs, b.SessionCPUs))
	}
	return nil
}
