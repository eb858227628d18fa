package api

import (
	"github.com/airlock-dev/airlock/batch"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/notebooks"
	"github.com/gin-gonic/gin"
)

// routes builds the gin engine: global middleware, the public routes, then
// the authenticated /v1 routes, each with its timeout and limits.
func (s *Server) routes() *gin.Engine {
	r := gin.New()
	r.HandleMethodNotAllowed = false
	r.ContextWithFallback = true
	r.Use(s.recovery(), s.observe(), s.cors())
	r.NoRoute(s.rateLimitIP(), func(c *gin.Context) {
		abortError(c, newError(core.ErrNotFound, "no such route"))
	})
	ip := s.rateLimitIP()

	quick := s.timeout(s.cfg.RequestTimeout)
	slow := s.timeout(s.cfg.ToolCallTimeout)
	body := limitBody(s.cfg.MaxBodyBytes)
	upload := limitBody(s.cfg.MaxUploadBytes)

	// Public: the UI, probes, metrics and the contract.
	// All are rate-limited per client address; /metrics moves to its own
	// listener with Config.MetricsAddr.
	r.GET("/", ip, quick, s.uiIndex)
	r.GET("/ui/*file", ip, quick, s.uiAsset)
	r.GET("/healthz", ip, quick, s.healthz)
	r.GET("/readyz", ip, quick, s.readyz)
	if s.cfg.MetricsAddr == "" {
		r.GET("/metrics", ip, quick, s.requireMetricsKey(), s.metricsHandler())
	}
	r.GET("/openapi.json", ip, quick, s.openAPI)
	r.GET("/v1/info", ip, quick, s.info)

	// Authenticated. Streams hold their own slot, not a call slot. A
	// request without a valid key spends its address's tokens first.
	v1 := r.Group("/v1", s.authenticate(), s.rateLimit())
	v1.GET("/runs/:id/events", s.limitConcurrency(s.streamGate), s.runEvents)
	// An interrupt must get through while calls hold every call slot.
	v1.POST("/sessions/:id/interrupt", quick, s.interruptSession)

	g := v1.Group("", s.limitConcurrency(s.callGate))
	g.GET("/tools", quick, s.listTools)
	g.GET("/environments", quick, s.listEnvironments)
	g.GET("/environments/:name", quick, s.getEnvironment)
	g.POST("/environments", slow, upload, s.createEnvironment)
	g.DELETE("/environments/:name", slow, s.deleteEnvironment)
	v1.GET("/environments/:name/events", s.limitConcurrency(s.streamGate), s.environmentEvents)
	g.POST("/tool-calls", slow, body, s.toolCall)
	g.POST("/tool-calls/approvals/:token", slow, body, s.decideToolCall)
	g.GET("/artifacts/:artifact", quick, s.artifact(false))

	g.POST("/sessions", slow, body, s.openSession)
	g.GET("/sessions", quick, s.listSessions)
	g.GET("/sessions/:id", quick, s.getSession)
	g.POST("/sessions/:id/restart", slow, s.restartSession)
	g.DELETE("/sessions/:id", slow, s.closeSession)
	g.POST("/sessions/:id/tool-calls", slow, body, s.sessionToolCall)
	g.PUT("/sessions/:id/files/*path", slow, upload, s.putFile)
	g.GET("/sessions/:id/files/*path", slow, s.getFile)
	g.GET("/sessions/:id/files", slow, s.listFiles)
	g.GET("/sessions/:id/artifacts/:artifact", quick, s.artifact(true))
	g.GET("/sessions/:id/notebook", quick, s.getNotebook)
	g.PUT("/sessions/:id/notebook", quick, limitBody(notebooks.MaxBytes), s.putNotebook)
	s.snapshotRoutes(g, slow, quick)
	s.introspectRoutes(g, slow)

	g.POST("/runs", quick, body, s.startRun)
	g.GET("/runs/:id", quick, s.getRun)
	g.POST("/runs/:id/cancel", quick, s.cancelRun)
	g.POST("/runs/:id/approvals/:token", quick, body, s.approveRun)

	v1.GET("/batches/:id/events", s.limitConcurrency(s.streamGate), s.batchEvents)
	g.POST("/batches", slow, upload, s.createBatch)
	g.GET("/batches", quick, s.listBatches)
	g.GET("/batches/:id", quick, s.batchOp((*batch.Manager).Get))
	g.GET("/batches/:id/results", slow, s.batchResults)
	g.GET("/batches/:id/errors", slow, s.batchErrors)
	g.GET("/batches/:id/summary", slow, s.batchSummary)
	g.GET("/batches/:id/report", slow, s.batchReport)
	g.POST("/batches/:id/cancel", quick, s.batchOp((*batch.Manager).Cancel))
	g.POST("/batches/:id/retry", quick, s.batchOp((*batch.Manager).Retry))

	s.mountMCP(r)
	s.mountJupyter(r)
	return r
}
