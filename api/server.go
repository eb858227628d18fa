package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/airlock-dev/airlock/batch"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/artifacts"
	"github.com/airlock-dev/airlock/internal/idempotency"
	"github.com/airlock-dev/airlock/internal/notebooks"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/internal/sessions"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/internal/toolcalls"
	"github.com/airlock-dev/airlock/state"
)

// Server is the HTTP API: an http.Handler, plus Run and Serve for a
// listener with graceful shutdown.
type Server struct {
	cfg        Config
	deps       Deps
	log        *slog.Logger
	engine     *gin.Engine
	metrics    *httpMetrics
	gatherer   prometheus.Gatherer
	limiter    *rateLimiter
	ipLimiter  *rateLimiter // per client address, outside the /v1 API
	callGate   *gate        // per-key concurrent requests
	streamGate *gate        // per-key open SSE streams
	uploads    *slots
	artifacts  *artifacts.Store
	records    *sessionrecords.Store
	sessions   *sessions.Service
	snapshots  *sessions.Snapshots // session snapshots, forks and the notebook export (issue 30)
	idem       *idempotency.Keys
	calls      *toolcalls.Service
	notebooks  *notebooks.Store
	openapi    []byte
	batches    *batch.Manager // nil without Deps.Batches

	drainOnce sync.Once
	draining  chan struct{} // closed when shutdown starts; ends SSE streams
}

// New builds the API from cfg and deps. It fails when cfg is inconsistent
// (no keys outside insecure-local mode) or a required dependency is nil.
//
// New sets gin to release mode (a process-wide gin setting) so that it does
// not print its debug route table.
func New(cfg Config, deps Deps) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if deps.Dispatcher == nil {
		return nil, fmt.Errorf("api: Deps.Dispatcher is required")
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	reg, gath := deps.Registerer, deps.Gatherer
	if reg == nil {
		own := prometheus.NewRegistry()
		reg = own
		if gath == nil {
			gath = own
		} else {
			gath = prometheus.Gatherers{gath, own}
		}
	}
	if gath == nil {
		gath = prometheus.NewRegistry()
	}
	m, err := newHTTPMetrics(reg)
	if err != nil {
		return nil, err
	}
	doc, err := openAPIDocument()
	if err != nil {
		return nil, err
	}
	if deps.State == nil {
		deps.State = state.NewMemory(cfg.Now)
	}
	s := &Server{
		cfg:        cfg,
		deps:       deps,
		log:        log,
		metrics:    m,
		gatherer:   gath,
		limiter:    newRateLimiter(cfg.RatePerSecond, cfg.RateBurst, cfg.Now),
		ipLimiter:  newRateLimiter(cfg.PublicRatePerSecond, cfg.PublicRateBurst, cfg.Now),
		callGate:   newGate(cfg.MaxConcurrentPerKey),
		streamGate: newGate(cfg.MaxStreamsPerKey),
		uploads:    newSlots("uploads", cfg.MaxUploadsPerKey, cfg.MaxUploads),
		artifacts: artifacts.New(artifacts.Config{TTL: cfg.ArtifactTTL, MaxBytes: cfg.ArtifactMaxBytes,
			OwnerBytes: cfg.ArtifactOwnerMaxBytes, OwnerCount: cfg.ArtifactOwnerMaxCount,
			OwnerQuota: func(owner string) (int64, int) {
				if p := cfg.Keys.Policy(owner); p != nil {
					return p.Budget.ArtifactBytes, p.Budget.ArtifactCount
				}
				return 0, 0
			}, Now: cfg.Now}, deps.State),
		records:   sessionrecords.New(deps.State, cfg.SessionIdleTTL, cfg.SessionMaxLife, cfg.Now),
		idem:      idempotency.New(deps.State),
		notebooks: notebooks.New(deps.State, cfg.Now),
		openapi:   doc,
		draining:  make(chan struct{}),
	}
	s.calls = toolcalls.New(toolcalls.Config{Grants: toolcalls.Grants{Keys: cfg.Keys, InsecureLocal: cfg.InsecureLocal, DefaultLimits: cfg.DefaultLimits,
		MaxLimits: cfg.MaxLimits, SessionCallTimeout: cfg.SessionCallTimeout, DefaultBudget: cfg.Budget, InputFolders: cfg.InputFolders, Logger: log},
		MaxArtifacts: cfg.ArtifactMaxPerCall, MaxArtifactBytes: cfg.ArtifactMaxCallBytes}, s.artifacts, s.records, s.idem)
	s.sessions = sessions.New(deps.Sessions, s.records, cfg.Now, log)
	snap, _ := deps.Sessions.(sessions.Snapshotter)
	s.snapshots = sessions.NewSnapshots(s.sessions, snap, snapshots.New(deps.State, snapshots.DefaultConfig(), cfg.Now), snapshots.NewCallLog(deps.State))
	s.snapshots.SetEnvironments(s.resolveEnvironment)
	if s.batches, err = s.newBatches(); err != nil {
		return nil, err
	}
	gin.SetMode(gin.ReleaseMode)
	s.engine = s.routes()
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.engine.ServeHTTP(w, r)
}

// Run listens on Config.Addr (and Config.MetricsAddr, for /metrics alone)
// and serves until ctx is done, then shuts down gracefully (see Serve).
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("api: listen on %s: %w", s.cfg.Addr, err)
	}
	if s.cfg.MetricsAddr == "" {
		return s.Serve(ctx, ln)
	}
	mln, err := net.Listen("tcp", s.cfg.MetricsAddr)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("api: listen on %s for metrics: %w", s.cfg.MetricsAddr, err)
	}
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	merr := make(chan error, 1)
	go func() { merr <- s.ServeMetrics(mctx, mln) }()
	err = s.Serve(ctx, ln)
	cancel()
	if e := <-merr; err == nil {
		err = e
	}
	return err
}

// MetricsHandler is /metrics alone, for a separate listener: the
// Prometheus exposition behind Config.MetricsKey (when set) and the
// per-address rate limit; every other path is 404.
func (s *Server) MetricsHandler() http.Handler {
	r := gin.New()
	r.Use(s.recovery())
	r.NoRoute(func(c *gin.Context) { abortError(c, newError(core.ErrNotFound, "no such route")) })
	r.GET("/metrics", s.rateLimitIP(), s.requireMetricsKey(), s.metricsHandler())
	return r
}

// ServeMetrics serves MetricsHandler on ln until ctx is done.
func (s *Server) ServeMetrics(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.MetricsHandler(), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("api: serving metrics", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("api: serve metrics: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}

// Serve serves on ln until ctx is done. Then it stops accepting
// connections, ends open event streams (clients resume with Last-Event-ID)
// and waits up to Config.ShutdownTimeout for in-flight requests, whose
// contexts are not cancelled, to finish.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.cfg.InsecureLocal {
		if err := ValidateListen(ln.Addr().String(), true, nil); err != nil {
			return fmt.Errorf("api: %w", err)
		}
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if s.batches != nil {
		bctx, stop := context.WithCancel(ctx)
		defer stop()
		go s.batches.Run(bctx)
	}
	s.log.Info("api: serving", "addr", ln.Addr().String(), "insecure_local", s.cfg.InsecureLocal)
	select {
	case err := <-errc:
		return fmt.Errorf("api: serve: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("api: shutting down", "timeout", s.cfg.ShutdownTimeout)
	s.drain()
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("api: shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("api: serve: %w", err)
	}
	return nil
}

// drain marks the server as shutting down; open SSE streams end.
func (s *Server) drain() {
	s.drainOnce.Do(func() { close(s.draining) })
}

// RunBatches resumes unfinished batches (this replica's or any other's
// whose lease expired) until ctx is done; Serve runs it itself. For
// servers mounted on another listener (httptest).
func (s *Server) RunBatches(ctx context.Context) {
	if s.batches != nil {
		s.batches.Run(ctx)
	}
}
