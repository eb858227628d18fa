package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/wire"
)

// Environments is the environments service (internal/envservice): it
// resolves the environment a session names and serves the admin routes.
type Environments interface {
	// Resolve returns the target of name for a caller who may use what
	// may accepts: 400 malformed, 404 unknown, 403 forbidden, 409 not built.
	Resolve(ctx context.Context, name string, may func(string) bool) (environments.Target, error)
	// List returns the built-in environments, then the custom ones.
	List(ctx context.Context) (wire.EnvironmentList, error)
	// Get returns one environment (404 naming it).
	Get(ctx context.Context, name string) (wire.Environment, error)
	// Create checks the spec and its content and starts its build.
	Create(ctx context.Context, req wire.CreateEnvironmentRequest) (wire.Environment, error)
	// Remove deletes an environment and its images.
	Remove(ctx context.Context, name string) error
	// Events returns the latest build's events after seq after, waiting
	// up to wait for one; last reports that the build has ended.
	Events(ctx context.Context, name string, after int64, limit int, wait time.Duration) ([]wire.EnvironmentEvent, []int64, bool, error)
}

// needEnvironments answers 503 when the server has no environments
// service, and 403 to a key the keys file does not mark admin=true
// when admin is set.
func (s *Server) needEnvironments(c *gin.Context, admin bool) bool {
	if s.deps.Environments == nil {
		abortError(c, newError(core.ErrUnavailable, "this server has no environments service"))
		return false
	}
	if admin && !s.cfg.InsecureLocal && !s.calls.Policy(owner(c)).IsAdmin() {
		abortError(c, newError(core.ErrForbidden, "managing environments needs an admin key (admin=true in the keys file)"))
		return false
	}
	return true
}

// mayUse is the environments owner may use, as a Resolve filter.
func (s *Server) mayUse(who string) func(string) bool {
	allowed := s.calls.Environments(who)
	return func(name string) bool {
		for _, a := range allowed {
			if a == "*" || a == name {
				return true
			}
		}
		return false
	}
}

// listEnvironments answers GET /v1/environments.
func (s *Server) listEnvironments(c *gin.Context) {
	if s.needEnvironments(c, false) {
		list, err := s.deps.Environments.List(c.Request.Context())
		s.reply(c, "list environments", http.StatusOK, list, err)
	}
}

// getEnvironment answers GET /v1/environments/{name}.
func (s *Server) getEnvironment(c *gin.Context) {
	if s.needEnvironments(c, false) {
		env, err := s.deps.Environments.Get(c.Request.Context(), c.Param("name"))
		s.reply(c, "get environment", http.StatusOK, env, err)
	}
}

// createEnvironment answers POST /v1/environments (admin keys) with 202
// and the environment as its build began (or 200 when it ended at once:
// an unchanged spec is a no-op).
func (s *Server) createEnvironment(c *gin.Context) {
	if !s.needEnvironments(c, true) {
		return
	}
	var req wire.CreateEnvironmentRequest
	if err := decodeJSON(c, &req, false); err != nil {
		fail(c, err)
		return
	}
	env, err := s.deps.Environments.Create(c.Request.Context(), req)
	status := http.StatusAccepted
	if env.Status != string(environments.StatusBuilding) {
		status = http.StatusOK
	}
	s.reply(c, "create environment", status, env, err)
}

// deleteEnvironment answers DELETE /v1/environments/{name} (admin keys) with 204.
func (s *Server) deleteEnvironment(c *gin.Context) {
	if s.needEnvironments(c, true) {
		s.reply(c, "delete environment", http.StatusNoContent, nil, s.deps.Environments.Remove(c.Request.Context(), c.Param("name")))
	}
}

// environmentEvents answers GET /v1/environments/{name}/events (admin
// keys) as Server-Sent Events: the latest build's step, log, progress and
// done or failed events ("id: SEQ", "event: TYPE", "data: " the
// wire.EnvironmentEvent). It ends after the build's last event.
func (s *Server) environmentEvents(c *gin.Context) {
	if !s.needEnvironments(c, true) {
		return
	}
	after, err := resumePoint(c)
	if err != nil {
		fail(c, err)
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.StreamTimeout)
	defer cancel()
	name := c.Param("name")
	if _, err := s.deps.Environments.Get(ctx, name); err != nil {
		fail(c, err)
		return
	}
	es := s.openEventStream(c)
	for es.alive {
		evs, seqs, last, err := s.deps.Environments.Events(ctx, name, after, 200, s.cfg.Heartbeat)
		if err != nil {
			return
		}
		for i, ev := range evs {
			data, _ := json.Marshal(ev)
			if !es.write(fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", seqs[i], sanitizeLine(ev.Type), data)) {
				return
			}
			after = seqs[i]
		}
		if last {
			return
		}
		if len(evs) == 0 && !es.write(": ping\n\n") {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-s.draining:
			return
		default:
		}
	}
}

// resolveEnvironment resolves the environment name for who: 400
// malformed, 404 unknown, 403 forbidden, 409 not built.
func (s *Server) resolveEnvironment(ctx context.Context, who, name string) (environments.Target, error) {
	if s.deps.Environments == nil {
		return (*environments.Resolver)(nil).Resolve(ctx, name, nil)
	}
	return s.deps.Environments.Resolve(ctx, name, s.mayUse(who))
}
