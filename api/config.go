package api

import (
	"cmp"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/keys"
)

// Config holds every tunable of the HTTP API. Zero values are replaced by
// the defaults of DefaultConfig in New.
type Config struct {
	// Addr is the listen address for Server.Run, e.g. "127.0.0.1:8080".
	Addr string
	// InsecureLocal serves without API keys; every request acts as the
	// owner "local". ValidateListen refuses it on a non-loopback Addr.
	InsecureLocal bool
	// Keys are the accepted API keys, already hashed (see keys.Load).
	Keys *keys.Set

	// MaxBodyBytes caps JSON request bodies (413 beyond).
	MaxBodyBytes int64
	// MaxUploadBytes caps a file upload (413 beyond).
	MaxUploadBytes int64
	// MaxUploadsPerKey and MaxUploads bound simultaneous file uploads per
	// key (429 quota beyond) and in total (429 busy beyond). An upload
	// streams in chunks, so each holds about one chunk of memory.
	MaxUploadsPerKey int
	MaxUploads       int

	// RatePerSecond and RateBurst shape the per-key token bucket (429 with
	// Retry-After when empty). RatePerSecond < 0 disables rate limiting.
	RatePerSecond float64
	RateBurst     int
	// PublicRatePerSecond and PublicRateBurst shape the per-client-address
	// bucket of every route outside the authenticated /v1 API (probes,
	// /metrics, /openapi.json, the UI, unknown routes, requests without a
	// valid key). Zero means the per-key values; < 0 disables it.
	PublicRatePerSecond float64
	PublicRateBurst     int

	// MetricsAddr, when set, serves /metrics on this separate listen
	// address (by Server.Run) and not on the main listener.
	MetricsAddr string
	// MetricsKey, when set, is the Bearer token /metrics requires.
	MetricsKey string
	// MaxConcurrentPerKey bounds a key's simultaneous non-streaming /v1
	// requests (429 busy beyond). MaxStreamsPerKey bounds its open SSE
	// streams.
	MaxConcurrentPerKey int
	MaxStreamsPerKey    int

	// RequestTimeout bounds quick routes; ToolCallTimeout bounds tool calls,
	// file transfers and session opening (by default the longest call
	// MaxLimits allows, its deadline moved for CPU wait as far as
	// core.MostWall lets it, plus two minutes: the queued job's own
	// deadline, a minute past that, ends it first); StreamTimeout bounds one SSE
	// connection (the client resumes with Last-Event-ID). A route past its
	// deadline answers 504.
	RequestTimeout  time.Duration
	ToolCallTimeout time.Duration
	StreamTimeout   time.Duration
	// Heartbeat is the interval of SSE comment lines that keep proxies open.
	Heartbeat time.Duration
	// ShutdownTimeout is how long Server.Run waits for in-flight requests.
	ShutdownTimeout time.Duration

	// CORSOrigins is the allowlist of browser origins ("*" allows any).
	// Empty means same-origin only.
	CORSOrigins []string

	// InputFolders are the host folders a run may mount read-only, by the
	// name a client uses ({"input": "NAME"}). Clients never send host paths.
	InputFolders map[string]string

	// ArtifactTTL and ArtifactMaxBytes bound the artifacts kept in the
	// state store: a new artifact that does not fit under ArtifactMaxBytes
	// (all keys together, every replica) is not kept, with a warning;
	// another key's artifacts are never evicted for it.
	ArtifactTTL      time.Duration
	ArtifactMaxBytes int64
	// ArtifactOwnerMaxBytes and ArtifactOwnerMaxCount are each key's
	// artifact quota (a key's policy may set its own), counted in the
	// state store for every replica together: past either, the key's new
	// artifacts are not kept until older ones expire.
	ArtifactOwnerMaxBytes int64
	ArtifactOwnerMaxCount int
	// ArtifactMaxPerCall and ArtifactMaxCallBytes bound what one call's
	// result may bring in, re-checked here whatever the sandbox says.
	ArtifactMaxPerCall   int
	ArtifactMaxCallBytes int64
	// SessionIdleTTL and SessionMaxLife expire the API's record of a
	// session unused this long or open this long; the defaults are the
	// sandbox's, so GET and tool calls answer 404 from the same moment.
	SessionIdleTTL time.Duration
	SessionMaxLife time.Duration
	// KernelCullIdle ends kernels of the Jupyter gateway (/api/kernels)
	// that ran nothing for this long (0: only the session idle limit).
	KernelCullIdle time.Duration

	// DefaultLimits are the server defaults, which are also the ceiling of
	// a request's limits: a request may only lower them, unless its key's
	// policy grants more. MaxLimits caps what a policy can grant. Both are
	// the sandbox's (serve sets them from the sandbox configuration); zero
	// fields are not checked.
	DefaultLimits core.Limits
	MaxLimits     core.Limits
	// SessionCallTimeout is the per-call limit of a session opened without
	// one (a notebook's cells, the workbench's assistant): sessions hold
	// longer work than one-shot calls. A session may also ask for up to it
	// when its key's ceiling is lower. It is at most MaxLimits.Timeout.
	SessionCallTimeout time.Duration
	// Budget is what each key may hold at once (a key's policy may set its
	// own): open sessions and their memory and CPUs. Past it: 429 quota.
	Budget keys.Budget

	// Now is the clock; nil means time.Now. Tests set it.
	Now func() time.Time
}

// DefaultConfig returns the defaults: loopback address, 1 MiB bodies, 32 MiB
// uploads, 20 requests/s with bursts of 40 and 8 concurrent calls per key.
func DefaultConfig() Config {
	maxTimeout := 5 * time.Minute
	return Config{
		Addr:                  "127.0.0.1:8080",
		MaxBodyBytes:          1 << 20,
		MaxUploadBytes:        32 << 20,
		MaxUploadsPerKey:      4,
		MaxUploads:            16,
		RatePerSecond:         20,
		RateBurst:             40,
		MaxConcurrentPerKey:   8,
		MaxStreamsPerKey:      8,
		RequestTimeout:        15 * time.Second,
		ToolCallTimeout:       toolCallTimeout(maxTimeout),
		StreamTimeout:         30 * time.Minute,
		Heartbeat:             15 * time.Second,
		ShutdownTimeout:       2 * time.Minute,
		ArtifactTTL:           time.Hour,
		ArtifactMaxBytes:      256 << 20,
		ArtifactOwnerMaxBytes: 64 << 20,
		ArtifactOwnerMaxCount: 1000,
		ArtifactMaxPerCall:    32,
		ArtifactMaxCallBytes:  32 << 20,
		SessionIdleTTL:        15 * time.Minute, // the sandbox's default idle limit
		SessionMaxLife:        2 * time.Hour,    // the sandbox's default maximum life
		SessionCallTimeout:    2 * time.Minute,
		DefaultLimits: core.Limits{Memory: 256 << 20, CPUs: 1, Pids: 128, Timeout: 10 * time.Second,
			OutputBytes: 64 << 10, TmpfsBytes: 64 << 20, NoFile: 256, FileSize: 64 << 20},
		MaxLimits: core.Limits{Memory: 2 << 30, CPUs: 2, Pids: 512, Timeout: maxTimeout,
			OutputBytes: 1 << 20, TmpfsBytes: 1 << 30, NoFile: 4096, FileSize: 1 << 30},
		Budget: keys.Budget{Sessions: 4, SessionMemory: 1 << 30, SessionCPUs: 4},
	}
}

// withDefaults fills zero fields from DefaultConfig and checks the rest.
func (c Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	c.Addr = cmp.Or(c.Addr, d.Addr)
	c.RatePerSecond = cmp.Or(c.RatePerSecond, d.RatePerSecond)
	c.PublicRatePerSecond = cmp.Or(c.PublicRatePerSecond, c.RatePerSecond)
	orDefault(&c.RateBurst, d.RateBurst)
	orDefault(&c.PublicRateBurst, c.RateBurst)
	for _, f := range []struct {
		v *int
		d int
	}{{&c.MaxConcurrentPerKey, d.MaxConcurrentPerKey}, {&c.MaxUploadsPerKey, d.MaxUploadsPerKey},
		{&c.MaxUploads, d.MaxUploads}, {&c.MaxStreamsPerKey, d.MaxStreamsPerKey}, {&c.ArtifactOwnerMaxCount, d.ArtifactOwnerMaxCount},
		{&c.ArtifactMaxPerCall, d.ArtifactMaxPerCall}} {
		orDefault(f.v, f.d)
	}
	for _, f := range []struct {
		v *int64
		d int64
	}{{&c.MaxBodyBytes, d.MaxBodyBytes}, {&c.MaxUploadBytes, d.MaxUploadBytes},
		{&c.ArtifactMaxBytes, d.ArtifactMaxBytes}, {&c.ArtifactOwnerMaxBytes, d.ArtifactOwnerMaxBytes}, {&c.ArtifactMaxCallBytes, d.ArtifactMaxCallBytes}} {
		orDefault(f.v, f.d)
	}
	for _, f := range []struct {
		v *time.Duration
		d time.Duration
	}{{&c.RequestTimeout, d.RequestTimeout},
		{&c.StreamTimeout, d.StreamTimeout}, {&c.Heartbeat, d.Heartbeat}, {&c.ShutdownTimeout, d.ShutdownTimeout},
		{&c.ArtifactTTL, d.ArtifactTTL}, {&c.SessionIdleTTL, d.SessionIdleTTL}, {&c.SessionMaxLife, d.SessionMaxLife}} {
		orDefault(f.v, f.d)
	}
	c.DefaultLimits = cmp.Or(c.DefaultLimits, d.DefaultLimits)
	c.MaxLimits = cmp.Or(c.MaxLimits, d.MaxLimits)
	// Unset, the route deadline follows the ceiling the server set.
	orDefault(&c.ToolCallTimeout, toolCallTimeout(cmp.Or(c.MaxLimits.Timeout, d.MaxLimits.Timeout)))
	if c.SessionCallTimeout < 0 {
		return c, fmt.Errorf("api config: session call timeout %s is negative", c.SessionCallTimeout)
	}
	orDefault(&c.SessionCallTimeout, d.SessionCallTimeout)
	if c.MaxLimits.Timeout > 0 && c.SessionCallTimeout > c.MaxLimits.Timeout {
		c.SessionCallTimeout = c.MaxLimits.Timeout
	}
	c.Budget = cmp.Or(c.Budget, d.Budget)
	if c.Now == nil {
		c.Now = time.Now
	}
	if !c.InsecureLocal && c.Keys.Len() == 0 {
		return c, fmt.Errorf("api config: no API keys (set AIRLOCK_API_KEYS or a keys file, or use insecure-local mode on loopback)")
	}
	if c.InsecureLocal {
		if err := ValidateListen(c.Addr, true, c.Keys); err != nil {
			return c, fmt.Errorf("api config: %w", err)
		}
	}
	return c, nil
}

// orDefault replaces a value that is not positive with def.
func orDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// toolCallTimeout is the route deadline of a tool call under a ceiling of
// maxTimeout: the longest call (its timeout moved for CPU wait as far as
// core.MostWall lets it) plus two minutes, past the queued job's own
// deadline (a minute after that, jobs.DefaultMargin).
func toolCallTimeout(maxTimeout time.Duration) time.Duration {
	return core.MostWall(maxTimeout) + 2*time.Minute
}
