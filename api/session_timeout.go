package api

import "github.com/airlock-dev/airlock/core"

// sessionTimeout is the per-call limit, in seconds, of a session opened
// with limits: its own timeout, else the server default (what a session
// call that names none gets).
func (s *Server) sessionTimeout(limits core.Limits) float64 {
	t := limits.Timeout
	if t <= 0 {
		t = s.cfg.DefaultLimits.Timeout
	}
	return t.Seconds()
}
