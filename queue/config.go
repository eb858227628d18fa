package queue

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Config tunes a queue. The zero value is usable: Open then builds an
// in-process queue with the defaults below.
type Config struct {
	// RedisURL selects the Redis backend ("redis://host:6379/0"); empty
	// selects the in-process backend (unless Deps.Redis is set).
	RedisURL string
	// Name is the queue's name; all of its Redis keys share the hash tag
	// {Name} so they live in one Redis Cluster slot. Default "default".
	Name string
	// Prefix starts every Redis key. Default "airlock".
	Prefix string
	// MaxDepth bounds accepted, unfinished jobs (queued plus running);
	// beyond it Do returns ErrBusy at once. Default 10000; negative means
	// no limit.
	MaxDepth int
	// MaxPerOwner bounds one owner's unfinished jobs; 0 means no limit.
	MaxPerOwner int
	// DefaultTimeout is the job deadline when neither the job nor the
	// caller's context sets one. Default 10 minutes.
	DefaultTimeout time.Duration
	// ResultTTL is how long an outcome is kept after the job ends, for
	// callers that retry or attach with the same job ID. Default 2 minutes.
	ResultTTL time.Duration
	// MaxResultBytes (memory) bounds the outcomes kept for ResultTTL, all
	// jobs together: past it the oldest are forgotten first (a caller
	// attaching to one then runs it again), so outcomes carrying
	// artifacts cannot pile up in the process. Default 32 MiB.
	MaxResultBytes int64
	// VisibilityTimeout (Redis) is how long a job may go without its
	// worker's heartbeat before another worker reclaims it. Default 30s.
	VisibilityTimeout time.Duration
	// MaxDeliveries (Redis) is how many times a job may be started before
	// it goes to the dead-letter stream. Default 3.
	MaxDeliveries int
	// LivenessTTL (Redis) is the lifetime of a worker's liveness key, which
	// it refreshes every third of it; when the key stays expired for half a
	// TTL more, the worker's sessions are lost. Default VisibilityTimeout
	// (30s), so a Redis stall that does not reclaim a worker's jobs does
	// not end its sessions either. A worker whose process died is known
	// sooner, by its pulse subscription (about 4 s; see the package doc).
	LivenessTTL time.Duration
	// SessionTTL (Redis) is how long a session binding lives without use.
	// Default 24h.
	SessionTTL time.Duration
	// SubmitTimeout (Redis) bounds the submission round trip; beyond it Do
	// returns ErrUnavailable. Default 2s.
	SubmitTimeout time.Duration
}

// WorkerConfig tunes one worker.
type WorkerConfig struct {
	// ID names the worker; default host-pid-random. Must be unique among
	// live workers of a queue; do not reuse one across restarts (a restarted
	// worker cannot hold its predecessor's sessions).
	ID string
	// Concurrency is how many jobs run at once in the worker's normal
	// slots, and the most batch-lane jobs it runs at once. Default 1.
	Concurrency int
	// InteractiveReserve is how many slots the worker has on top of
	// Concurrency that only interactive-lane and session jobs use, so an
	// interactive call starts at once even while batch jobs fill every
	// normal slot. The worker runs at most Concurrency batch jobs and at
	// most Concurrency+InteractiveReserve jobs in all; when slots are
	// scarce, interactive jobs still go first. Default 1 when zero;
	// negative means none: Concurrency slots shared by both lanes, so an
	// interactive job waits for a running job to end like a batch one.
	InteractiveReserve int
	// Grace is how long Run waits for running jobs at shutdown before
	// cancelling them. Default 30s.
	Grace time.Duration
	// ReadBlock (Redis) bounds one blocking XREADGROUP; it is also the
	// worst-case delay before Run notices shutdown. An empty batch lane is
	// looked at again after 20 ms, doubling up to ReadBlock while it stays
	// empty, so a batch job reaching an idle worker starts within ReadBlock
	// at worst. Default 2s.
	ReadBlock time.Duration
	// Environments (Redis), when set, lists the content hashes of the
	// environments whose images this worker holds; each heartbeat
	// advertises them, so jobs for them (Job.Environment) come to it.
	// It is called from the heartbeat: it must return quickly.
	Environments func() []string
	// OnStop, when set, is called once when Run stops: after the worker
	// stopped taking jobs and before it gives up its sessions (unbinds
	// them and answers their waiting jobs with ErrSessionLost), so the
	// handler can save them where a caller finds them (issue 30). Jobs
	// still running keep running meanwhile. It must return in bounded
	// time.
	OnStop func()
}

// Deps are a queue's collaborators. All are optional.
type Deps struct {
	// Logger receives the queue's logs; default slog.Default().
	Logger *slog.Logger
	// Registerer receives the queue's metrics; nil registers nothing.
	// Register at most one queue per Registerer.
	Registerer prometheus.Registerer
	// Redis is an existing client (plain, failover or cluster) to use
	// instead of dialling Config.RedisURL; the queue does not close it.
	// Build it with ContextTimeoutEnabled so that SubmitTimeout bounds a
	// hung server (NewRedisClient does).
	Redis redis.UniversalClient
}

// Open returns the Redis queue when cfg.RedisURL or deps.Redis is set, and
// the in-process queue otherwise.
func Open(cfg Config, deps Deps) (Queue, error) {
	if cfg.RedisURL == "" && deps.Redis == nil {
		return NewMemory(cfg, deps)
	}
	return NewRedis(cfg, deps)
}

func (c Config) withDefaults() Config {
	c.Name = cmp.Or(c.Name, "default")
	c.Prefix = cmp.Or(c.Prefix, "airlock")
	if c.MaxDepth == 0 {
		c.MaxDepth = 10000
	}
	c.DefaultTimeout = cmp.Or(c.DefaultTimeout, 10*time.Minute)
	c.ResultTTL = cmp.Or(c.ResultTTL, 2*time.Minute)
	c.MaxResultBytes = cmp.Or(c.MaxResultBytes, 32<<20)
	c.VisibilityTimeout = cmp.Or(c.VisibilityTimeout, 30*time.Second)
	c.MaxDeliveries = cmp.Or(c.MaxDeliveries, 3)
	c.LivenessTTL = cmp.Or(c.LivenessTTL, c.VisibilityTimeout)
	c.SessionTTL = cmp.Or(c.SessionTTL, 24*time.Hour)
	c.SubmitTimeout = cmp.Or(c.SubmitTimeout, 2*time.Second)
	return c
}

func (c WorkerConfig) withDefaults() WorkerConfig {
	if c.ID == "" {
		host, _ := os.Hostname()
		c.ID = fmt.Sprintf("%s-%d-%s", cmp.Or(host, "worker"), os.Getpid(), randomID(3))
	}
	c.Concurrency = max(c.Concurrency, 1)
	if c.InteractiveReserve == 0 {
		c.InteractiveReserve = 1
	}
	c.InteractiveReserve = max(c.InteractiveReserve, 0)
	c.Grace = cmp.Or(c.Grace, 30*time.Second)
	c.ReadBlock = cmp.Or(c.ReadBlock, 2*time.Second)
	return c
}

// slots is how many jobs the worker runs at once in all.
func (c WorkerConfig) slots() int { return c.Concurrency + c.InteractiveReserve }

func (d Deps) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.Default()
	}
	return d.Logger
}

// randomID returns n random bytes in hex.
func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// deadlineFor returns the job's effective deadline: the earlier of the
// job's own, the context's, and now+def when neither is set.
func deadlineFor(ctxDeadline time.Time, hasCtx bool, j Job, def time.Duration, now time.Time) time.Time {
	d := j.Deadline
	if d.IsZero() && !hasCtx {
		return now.Add(def)
	}
	if d.IsZero() || (hasCtx && ctxDeadline.Before(d)) {
		d = ctxDeadline
	}
	return d
}
