package api

import (
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/keys"
)

// ceiling returns the most a request of owner may ask for: its policy's
// limits where set (capped at Config.MaxLimits), else the server defaults.
// With InsecureLocal there are no keys: the loopback user is the operator,
// whose ceiling is the server maximum, as for the local commands.
func (s *Server) ceiling(owner string) core.Limits {
	if s.cfg.InsecureLocal {
		return s.cfg.MaxLimits
	}
	return s.policy(owner).Ceiling(s.cfg.DefaultLimits, s.cfg.MaxLimits)
}

// checkCeiling refuses (400) any limit of a request over owner's ceiling,
// naming the field, the ceiling and where a higher one can come from.
func (s *Server) checkCeiling(owner string, l core.Limits) error {
	errs := l.Over(s.ceiling(owner))
	if len(errs) == 0 {
		return nil
	}
	return newError(core.ErrInvalid, "limits may only lower this key's ceiling (the server defaults, unless the key's policy in the keys file grants more): "+
		strings.Join(errs, "; "))
}

// policy returns owner's policy, nil when its key has none.
func (s *Server) policy(owner string) *keys.Policy {
	return s.cfg.Keys.Policy(owner)
}

// budget returns owner's budgets: its policy's where set, else the server's.
func (s *Server) budget(owner string) keys.Budget {
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
