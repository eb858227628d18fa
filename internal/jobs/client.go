package jobs

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/queue"
)

// Client sends sandbox requests through a queue and waits for their result.
// It is the dispatcher's Executor and the API's session backend.
type Client struct {
	q       queue.Queue
	cfg     ClientConfig
	resumes *snapshots.Resumes // nil: gone sessions are not woken (see SetResumes)
}

// ClientConfig sets how long a job may take.
type ClientConfig struct {
	// DefaultTimeout is assumed for a one-shot request that names no
	// timeout (it should match the workers' sandbox default).
	DefaultTimeout time.Duration
	// SessionTimeout is assumed for a session call that names no timeout:
	// the session's own limit applies, which the client does not know, so
	// it should be the workers' sandbox maximum (default 5 minutes).
	SessionTimeout time.Duration
	// Margin is added to a request's longest run (its timeout, moved by
	// the time its code waited for a CPU: core.MostWall) for the job
	// deadline: queueing, container start and collection (default
	// DefaultMargin).
	Margin time.Duration
	// ChunkBytes is the size of one file chunk sent to or read from a
	// worker (default 1 MiB): a transfer holds at most about this much.
	ChunkBytes int
	// BuildAllowance is added to the deadline of a call in a custom
	// environment that no live worker holds: the worker that takes it
	// builds the environment first (default 30 minutes).
	BuildAllowance time.Duration
}

// DefaultMargin is ClientConfig.Margin's default.
const DefaultMargin = time.Minute

// NewClient returns a Client over q.
func NewClient(q queue.Queue, cfg ClientConfig) *Client {
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = 10 * time.Second
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 5 * time.Minute
	}
	if cfg.Margin <= 0 {
		cfg.Margin = DefaultMargin
	}
	if cfg.ChunkBytes <= 0 {
		cfg.ChunkBytes = DefaultChunkBytes
	}
	if cfg.BuildAllowance <= 0 {
		cfg.BuildAllowance = 30 * time.Minute
	}
	return &Client{q: q, cfg: cfg}
}

// Exec runs one request on some worker (or, for a session, on the worker
// holding it). When ctx carries a core.Sink, the events the engine emits
// while the call runs reach it, in order, before Exec returns. Refusals by the worker come back as errors wrapping the
// sandbox sentinels; queue failures wrap the dispatcher's.
func (c *Client) Exec(ctx context.Context, req core.Request) (core.Result, error) {
	return c.resumeExec(ctx, req)
}

// exec is Exec without waking a gone session.
func (c *Client) exec(ctx context.Context, req core.Request) (core.Result, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return core.Result{}, fmt.Errorf("jobs: encode request: %w", err)
	}
	timeout := req.Limits.Timeout
	switch {
	case timeout > 0:
	case req.SessionID != "" && (req.Op == core.OpExec || req.Op == ""):
		timeout = c.cfg.SessionTimeout
	default:
		timeout = c.cfg.DefaultTimeout
	}
	id := req.JobID
	if id == "" && req.IdempotencyKey != "" {
		id = idempotentID(req.Owner, req.IdempotencyKey)
	}
	if id == "" {
		id = newID()
	}
	// core.Lane and queue.Lane spell the lanes alike; the queue refuses an
	// unknown one (ErrInvalid).
	job := queue.Job{ID: id, Owner: req.Owner, Session: req.SessionID, Lane: queue.Lane(req.Lane), Payload: payload,
		Deadline: time.Now().Add(core.MostWall(timeout) + c.cfg.Margin)}
	if req.Op == core.OpSessionOpen {
		job.Session = "" // a wake opens its session again on any worker
	}
	if sink := core.SinkFrom(ctx); sink != nil {
		job.OnProgress = progressSink(sink)
	}
	if req.SessionID == "" && req.EnvironmentHash != "" && !environments.Builtin(req.Environment) {
		job.Environment, job.BuildAllowance = req.EnvironmentHash, c.cfg.BuildAllowance
	}
	out, err := c.q.Do(ctx, job)
	if err != nil {
		return core.Result{}, fmt.Errorf("jobs: %w", err)
	}
	var env envelope
	if err := json.Unmarshal(out, &env); err != nil {
		return core.Result{}, fmt.Errorf("jobs: decode reply: %w", err)
	}
	if env.Error != nil {
		return core.Result{}, fromWire(env.Error)
	}
	if env.Result == nil {
		return core.Result{}, errors.New("jobs: empty reply")
	}
	return *env.Result, nil
}

// rejected turns a rejected Result into an error for session operations,
// which have no result to carry it.
func rejected(res core.Result) error {
	if res.Status == core.StatusRejected {
		return fmt.Errorf("%w: %s", core.ErrInvalid, res.Message)
	}
	return nil
}

// OpenSession opens a session on some worker and returns its id.
func (c *Client) OpenSession(ctx context.Context, owner string, limits core.Limits) (string, error) {
	return c.OpenSessionOpts(ctx, owner, limits, false)
}

// OpenSessionOpts is OpenSession with background work allowed or not
// (core.Request.Background).
func (c *Client) OpenSessionOpts(ctx context.Context, owner string, limits core.Limits, background bool) (string, error) {
	res, err := c.Exec(ctx, core.Request{Op: core.OpSessionOpen, Owner: owner, Limits: limits, Background: background})
	if err != nil {
		return "", err
	}
	if err := rejected(res); err != nil {
		return "", err
	}
	return res.SessionID, nil
}

// OpenSessionRequest opens a session from a full OpSessionOpen request
// (its Egress, say) and returns its id.
func (c *Client) OpenSessionRequest(ctx context.Context, req core.Request) (string, error) {
	req.Op = core.OpSessionOpen
	res, err := c.Exec(ctx, req)
	if err != nil {
		return "", err
	}
	if err := rejected(res); err != nil {
		return "", err
	}
	return res.SessionID, nil
}

// CloseSession destroys a session.
func (c *Client) CloseSession(ctx context.Context, owner, id string) error {
	_, err := c.Exec(ctx, core.Request{Op: core.OpSessionClose, Owner: owner, SessionID: id})
	return err
}

// idempotentID derives a job id from owner and idempotency key, so a
// resubmission (a client retrying after a timeout or 503) attaches to the
// job already queued, running or finished instead of running a second one.
func idempotentID(owner, key string) string {
	sum := sha256.Sum256([]byte(owner + "\x00" + key))
	return "k-" + hex.EncodeToString(sum[:16])
}

// newID returns a random job id.
func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "j-" + hex.EncodeToString(b[:])
}

// OpenSessionIn opens a session in the environment env (as the gate
// resolved it) on some worker and returns its id.
func (c *Client) OpenSessionIn(ctx context.Context, owner string, env environments.Target, limits core.Limits, background bool) (string, error) {
	req := core.Request{Op: core.OpSessionOpen, Owner: owner, Limits: limits, Background: background}
	env.Apply(&req)
	res, err := c.Exec(ctx, req)
	if err != nil {
		return "", err
	}
	if err := rejected(res); err != nil {
		return "", err
	}
	return res.SessionID, nil
}
