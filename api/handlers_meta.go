package api

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/wire"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// readyCheckTimeout bounds each readiness probe.
const readyCheckTimeout = 3 * time.Second

// healthz answers GET /healthz: the process is up.
func (s *Server) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, wire.Health{Status: "ok"})
}

// readyz answers GET /readyz: 200 when every check passes, else 503
// not_ready with each check's state in details.checks. Error texts are
// logged, not returned, since the route is unauthenticated.
func (s *Server) readyz(c *gin.Context) {
	results := make(map[string]string, len(s.deps.Checks))
	var mu sync.Mutex
	var wg sync.WaitGroup
	failed := false
	for _, chk := range s.deps.Checks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(c.Request.Context(), readyCheckTimeout)
			defer cancel()
			err := chk.Check(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = true
				results[chk.Name] = "unavailable"
				s.log.Warn("api: readiness check failed", "check", chk.Name, "err", err)
				return
			}
			results[chk.Name] = "ok"
		})
	}
	wg.Wait()
	select {
	case <-s.draining:
		failed = true
		results["server"] = "shutting_down"
	default:
	}
	if failed {
		e := newError(core.ErrNotReady, "not ready").withDetails(map[string]any{"checks": results})
		e.RetryAfter = 5
		abortError(c, e)
		return
	}
	c.JSON(http.StatusOK, wire.Readiness{Status: "ready", Checks: results})
}

// metricsHandler serves the Prometheus exposition of the gatherer.
func (s *Server) metricsHandler() gin.HandlerFunc {
	h := promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{ErrorLog: nil})
	return gin.WrapH(h)
}

// info answers GET /v1/info (unauthenticated): what the UI needs before it
// has a key.
func (s *Server) info(c *gin.Context) {
	configured := s.deps.Runs != nil && s.deps.Runs.Configured()
	out := wire.Info{AuthRequired: !s.cfg.InsecureLocal, ModelConfigured: configured, Sessions: s.deps.Sessions != nil,
		MaxUploadBytes: s.cfg.MaxUploadBytes, Inputs: s.calls.InputNames()}
	if !configured {
		out.ModelHelp = noModelHelp
	}
	c.JSON(http.StatusOK, out)
}
