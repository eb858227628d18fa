package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/gin-gonic/gin"
)

// Keys of values the middleware stores in the gin.Context.
const (
	ctxOwner     = "airlock.owner"
	ctxErrorCode = "airlock.error_code"
)

// localOwner is the owner of everything in insecure-local mode.
const localOwner = "local"

// owner returns the authenticated owner of the request.
func owner(c *gin.Context) string { return c.GetString(ctxOwner) }

// recovery turns a handler panic into a logged 500.
func (s *Server) recovery() gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				s.log.Error("api: handler panic", "method", c.Request.Method, "path", c.Request.URL.Path, "panic", r)
				if !c.Writer.Written() {
					abortError(c, newError(core.ErrInternal, "internal error"))
				}
			}
		}()
		c.Next()
	}
}

// observe logs each request and records the HTTP metrics by route pattern.
func (s *Server) observe() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := s.cfg.Now()
		s.metrics.inFlight.Inc()
		defer s.metrics.inFlight.Dec()
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		code := c.Writer.Status()
		el := s.cfg.Now().Sub(start)
		s.metrics.observe(c.Request.Method, route, code, el)
		s.log.Debug("api: request", "method", methodLabel(c.Request.Method), "route", route, "status", code,
			"error_code", c.GetString(ctxErrorCode), "owner", owner(c), "duration_ms", el.Milliseconds())
	}
}

// cors answers preflights and sets the CORS headers for allowlisted origins.
// Other origins get no CORS headers, so browsers refuse the response.
func (s *Server) cors() gin.HandlerFunc {
	return func(c *gin.Context) {
		origin := c.GetHeader("Origin")
		ok := origin != "" && s.originAllowed(origin)
		if ok {
			h := c.Writer.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Expose-Headers", "Retry-After, Content-Disposition")
		}
		if c.Request.Method == http.MethodOptions && c.GetHeader("Access-Control-Request-Method") != "" {
			if ok {
				h := c.Writer.Header()
				h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS")
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
				h.Set("Access-Control-Max-Age", "600")
			}
			c.AbortWithStatus(http.StatusNoContent)
			return
		}
		c.Next()
	}
}

// authenticate resolves the Bearer key to its owner, or answers 401.
func (s *Server) authenticate() gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.cfg.InsecureLocal {
			if e := s.localGuard(c.Request); e != nil {
				abortError(c, e)
				return
			}
			c.Set(ctxOwner, localOwner)
			c.Next()
			return
		}
		key, ok := bearer(c.GetHeader("Authorization"))
		owner := ""
		if ok {
			owner, ok = s.cfg.Keys.Owner(key)
		}
		if !ok {
			if !s.spendIP(c) {
				return
			}
			c.Header("WWW-Authenticate", `Bearer realm="airlock"`)
			abortError(c, newError(core.ErrUnauthorized, "missing or unknown API key: send Authorization: Bearer KEY"))
			return
		}
		c.Set(ctxOwner, owner)
		c.Next()
	}
}

// localGuard protects keyless insecure-local mode from other web sites in
// the user's browser: the request must be addressed to a loopback host (no
// DNS rebinding) and, when it carries an Origin, come from this server or
// an allowlisted origin (no cross-site request forgery).
func (s *Server) localGuard(r *http.Request) *Error {
	if !isLoopback(hostOnly(r.Host)) {
		return newError(core.ErrInvalid, "insecure-local mode only answers requests addressed to a loopback host")
	}
	origin := r.Header.Get("Origin")
	if origin == "" || s.originAllowed(origin) {
		return nil
	}
	if u, err := url.Parse(origin); err == nil && u.Host == r.Host {
		return nil
	}
	return newError(core.ErrInvalid, "cross-origin request from an origin that is not allowed")
}

// originAllowed reports whether origin is in the CORS allowlist.
func (s *Server) originAllowed(origin string) bool {
	for _, o := range s.cfg.CORSOrigins {
		if o == "*" || strings.TrimRight(o, "/") == origin {
			return true
		}
	}
	return false
}

// hostOnly strips the port from a Host header value.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// bearer extracts the token of an "Authorization: Bearer TOKEN" header.
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// rateLimit spends one of the owner's tokens or answers 429 rate_limited.
func (s *Server) rateLimit() gin.HandlerFunc {
	return func(c *gin.Context) {
		if spend(c, s.limiter, owner(c), "rate limit exceeded for this API key") {
			c.Next()
		}
	}
}

// rateLimitIP spends one of the client address's tokens on every route
// outside the authenticated /v1 API (probes, metrics, the contract, the UI,
// unknown routes and unauthenticated /v1 requests), or answers 429. The
// address is the connection's peer, not a forwarding header a client can
// forge.
func (s *Server) rateLimitIP() gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.spendIP(c) {
			c.Next()
		}
	}
}

// spendIP spends one of the client address's tokens, or answers 429.
func (s *Server) spendIP(c *gin.Context) bool {
	return spend(c, s.ipLimiter, "ip:"+hostOnly(c.Request.RemoteAddr), "rate limit exceeded for this client address")
}

// spend takes one of key's tokens from l, or answers 429 rate_limited
// with msg and the wait and reports false.
func spend(c *gin.Context, l *rateLimiter, key, msg string) bool {
	ok, wait := l.allow(key)
	if !ok {
		e := newError(core.ErrRateLimited, msg)
		e.RetryAfter = wait
		abortError(c, e)
	}
	return ok
}

// requireMetricsKey answers 401 unless the request carries Config.MetricsKey
// as a Bearer token (when one is configured).
func (s *Server) requireMetricsKey() gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.cfg.MetricsKey == "" {
			c.Next()
			return
		}
		key, _ := bearer(c.GetHeader("Authorization"))
		a, b := sha256.Sum256([]byte(key)), sha256.Sum256([]byte(s.cfg.MetricsKey))
		if subtle.ConstantTimeCompare(a[:], b[:]) != 1 {
			c.Header("WWW-Authenticate", `Bearer realm="airlock-metrics"`)
			abortError(c, newError(core.ErrUnauthorized, "/metrics needs the metrics key: send Authorization: Bearer KEY"))
			return
		}
		c.Next()
	}
}

// limitConcurrency holds one of the owner's slots in g for the request, or
// answers 429 busy.
func (s *Server) limitConcurrency(g *gate) gin.HandlerFunc {
	return func(c *gin.Context) {
		o := owner(c)
		if !g.acquire(o) {
			e := newError(core.ErrBusy, "too many concurrent requests for this API key")
			e.RetryAfter = retryAfterBusy
			abortError(c, e)
			return
		}
		defer g.release(o)
		c.Next()
	}
}

// timeout bounds the handler's context by d, and the connection's read and
// write deadlines by d plus a grace period, so neither a slow client nor a
// stuck handler can hold the connection.
func (s *Server) timeout(d time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), d)
		defer cancel()
		c.Request = c.Request.WithContext(ctx)
		rc := http.NewResponseController(c.Writer)
		_ = rc.SetReadDeadline(time.Now().Add(d + 10*time.Second))
		_ = rc.SetWriteDeadline(time.Now().Add(d + 10*time.Second))
		c.Next()
	}
}

// limitBody caps the request body at n bytes; reading past it fails with
// *http.MaxBytesError, which handlers map to 413.
func limitBody(n int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.ContentLength > n {
			abortError(c, newError(core.ErrTooLarge, maxBytesErrorMsg).
				withDetails(map[string]any{"limit_bytes": n}))
			return
		}
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, n)
		c.Next()
	}
}
