package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/internal/jupyter"
	"github.com/airlock-dev/airlock/internal/kernels"
)

// mountJupyter adds the Jupyter kernel gateway (internal/jupyter): the
// kernels REST API and the kernels' websockets, behind the same keys (as
// `Authorization: token KEY`, Jupyter's scheme, or Bearer), rate limit and
// per-key concurrency as /v1: REST requests hold a call slot, a websocket
// a stream slot; an interrupt holds none, so it gets through busy cells.
func (s *Server) mountJupyter(r *gin.Engine) {
	gw := jupyter.New(jupyter.Config{
		CullIdle:   s.cfg.KernelCullIdle,
		WriteError: s.jupyterError,
		Stop:       s.draining,
		Logger:     s.log,
	}, s.kernels())
	serve := func(c *gin.Context) {
		gw.Handler().ServeHTTP(c.Writer, c.Request.WithContext(jupyter.WithOwner(c.Request.Context(), owner(c))))
	}
	auth := []gin.HandlerFunc{jupyterScheme, s.authenticate(), s.rateLimit()}
	quick := append(auth[:len(auth):len(auth)], s.timeout(s.cfg.RequestTimeout), serve)
	call := append(auth[:len(auth):len(auth)], s.limitConcurrency(s.callGate), s.timeout(s.cfg.ToolCallTimeout), limitBody(s.cfg.MaxBodyBytes), serve)
	for _, p := range []string{"/api", "/api/kernelspecs", "/api/kernelspecs/:name", "/kernelspecs/:name/*path", "/api/kernels", "/api/kernels/:id"} {
		r.GET(p, call...)
	}
	r.POST("/api/kernels", call...)
	r.DELETE("/api/kernels/:id", call...)
	r.POST("/api/kernels/:id/restart", call...)
	r.POST("/api/kernels/:id/interrupt", quick...)
	r.GET("/api/kernels/:id/channels", append(auth[:len(auth):len(auth)], s.limitConcurrency(s.streamGate), serve)...)
}

// jupyterScheme accepts Jupyter's `Authorization: token KEY` as the
// Bearer key authenticate reads, and, with no Authorization header,
// Jupyter's `?token=KEY` (how a browser's websocket carries it); the
// parameter is taken out of the URL so nothing after logs the key.
func jupyterScheme(c *gin.Context) {
	h := strings.TrimSpace(c.GetHeader("Authorization"))
	if scheme, tok, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "token") {
		c.Request.Header.Set("Authorization", "Bearer "+strings.TrimSpace(tok))
	}
	if q := c.Request.URL.Query(); q.Has("token") {
		if h == "" && q.Get("token") != "" {
			c.Request.Header.Set("Authorization", "Bearer "+q.Get("token"))
		}
		q.Del("token")
		c.Request.URL.RawQuery = q.Encode()
	}
	c.Next()
}

// jupyterError answers a failed gateway request as every API error.
func (s *Server) jupyterError(w http.ResponseWriter, r *http.Request, err error) {
	writeError(w, toError(r.Context(), err))
}

// kernels is the gateway's backend over the API's services.
func (s *Server) kernels() *kernels.Backend {
	ops, _ := s.deps.Sessions.(kernels.Ops)
	return &kernels.Backend{Available: s.deps.Sessions != nil, Service: s.sessions, Records: s.records, Calls: s.calls,
		Dispatcher: s.deps.Dispatcher, Ops: ops, Defaults: s.cfg.DefaultLimits,
		Allow:            func(owner string) bool { ok, _ := s.limiter.allow(owner); return ok },
		EnvironmentNames: s.kernelEnvironments, Resolve: s.resolveEnvironment}
}

// kernelEnvironments lists the custom environments who may use that run
// Python and can run calls now: one kernelspec each.
func (s *Server) kernelEnvironments(ctx context.Context, who string) []string {
	if s.deps.Environments == nil {
		return nil
	}
	list, err := s.deps.Environments.List(ctx)
	if err != nil {
		s.log.Warn("jupyter: list environments for the kernelspecs", "err", err)
		return nil
	}
	may := s.mayUse(who)
	var out []string
	for _, e := range list.Environments {
		if !e.Builtin && e.Base == environments.Python && e.Image != "" && e.Status != string(environments.StatusFailed) && may(e.Name) {
			out = append(out, e.Name)
		}
	}
	return out
}
