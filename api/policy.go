package api

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/keys"
)

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
func (s *Server) checkSessionBudget(ctx context.Context, owner string, l core.Limits) error {
	b := s.budget(owner)
	n, mem, cpus := s.sessions.Usage(ctx, owner, s.effective)
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
